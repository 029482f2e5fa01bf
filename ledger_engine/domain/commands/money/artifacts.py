"""FreezeArtifact and RecordCommitmentObservation: batches from preparation to on-chain commitment.

FreezeArtifact has three steps on one batch:

- ``prepare``: reserves the batch ID with its kind, window and (for a
  correction) parent.
- ``freeze``: writes the artifact once: protected reference, hash (listed in
  the envelope's evidence, so the bytes exist already) and item count. A
  statement index lists its statements, which are recorded with it. Creates
  the ``batch.anchor`` effect a committer works.
- A statement index may carry a statement tree: each statement its leaf
  hash, the step the ``statement_root``. The statements are built outside,
  at the command boundary, from the state they describe (their lines are far
  more than a rule should read); the rule recomputes the root from the leaf
  hashes in public-proof-ID order (at most 5,000, a few milliseconds) and
  refuses any other. That root, not the artifact hash, is what the batch
  anchors (docs/adr/0042).
- ``abandon``: a frozen or failed batch whose anchor effect is not claimed is
  given up, keeping its ID, artifact and reason.

The committer completes the anchor effect with ``submitted`` or ``unknown``
(both with the commitment's transaction hash) or ``failed`` (retry: the effect
is reopened with the same payload). A committer's observation (it holds
``observer`` as well: an observer of payments does not confirm commitments)
of a confirmed commitment, whose artifact hash must equal the frozen one,
confirms the batch; a repeat is a
no-op, a confirmation by another transaction is CONFLICTING_EVIDENCE.

A commitment also anchors the journal: the committer's ``anchor`` call names
the journal tree's size and root when it was signed, and the observation
records them as the batch's ``journal_tree``, so an anchored batch commits
every journal entry up to that size. The rule sees no tree (it reads state
only): it requires the size to be of entries already journalled; the
executor checks the root against its tree before the rule runs
(docs/adr/0041).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ledger_engine.domain.changes import require, require_present
from ledger_engine.domain.commands.money import batches, outbox
from ledger_engine.domain.commands.money.attempts import TransactionHash
from ledger_engine.domain.commands.money.statements import Statement, record_statements
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_payouts import Artifact, Batch, Effect, batch_key
from ledger_engine.domain.types import Count, Digest, Identifier, TimestampMs
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.merkle.frontier import Frontier
from ledger_engine.open_json import CommandResult

MAX_STATEMENTS = 5_000


class PrepareBatch(Payload):
    action: Literal["prepare"]
    kind: Literal["allocation", "statement_index", "correction"]
    window_start_ms: TimestampMs
    window_end_ms: TimestampMs
    parent_batch_id: Identifier | None = None

    @model_validator(mode="after")
    def _window_and_parent(self) -> "PrepareBatch":
        if self.window_end_ms <= self.window_start_ms:
            raise ValueError("a batch window ends after it starts")
        if (self.kind == "correction") != (self.parent_batch_id is not None):
            raise ValueError("a correction batch, and only a correction, names its parent batch")
        return self


class FreezeBatch(Payload):
    action: Literal["freeze"]
    artifact_ref: Identifier
    artifact_hash: Digest
    count: Count
    anchor_effect_id: Identifier
    statements: list[Statement] = Field(default=[], max_length=MAX_STATEMENTS)
    statement_root: Digest | None = None

    @model_validator(mode="after")
    def _sorted_statements(self) -> "FreezeBatch":
        ids = [statement.statement_id for statement in self.statements]
        if ids != sorted(set(ids)):
            raise ValueError("statements must be sorted by statement_id and distinct")
        with_leaves = {statement.leaf_hash is not None for statement in self.statements}
        if with_leaves - {self.statement_root is not None}:
            raise ValueError("every statement carries a leaf hash exactly when the index has a statement root")
        return self


class AbandonBatch(Payload):
    action: Literal["abandon"]
    reason: Literal["superseded", "prepared_in_error", "source_changed"]


class FreezeArtifactPayload(Payload):
    batch_id: Identifier
    step: Annotated[PrepareBatch | FreezeBatch | AbandonBatch, Field(discriminator="action")]


class JournalTreeClaim(Payload):
    """The journal tree a commitment anchored: its size (entries 1..size) and RFC 9162 root."""

    size: Count
    root: Digest


class RecordCommitmentObservationPayload(Payload):
    batch_id: Identifier
    transaction_hash: TransactionHash
    artifact_hash: Digest
    outcome: Literal["confirmed", "failed"]
    ledger_version: Count
    evidence_digest: Digest
    # What the committer's anchor call named; fixture histories from before the journal tree omit it.
    journal_tree: JournalTreeClaim | None = None


@command("FreezeArtifact", payload=FreezeArtifactPayload, roles={"finance"}, cites_evidence=True)
def freeze_artifact(ctx: RuleContext, p: FreezeArtifactPayload) -> CommandResult:
    if isinstance(p.step, PrepareBatch):
        return _prepare(ctx, p.batch_id, p.step)
    batch = batches.load_batch(ctx.changes, p.batch_id)
    if isinstance(p.step, FreezeBatch):
        return _freeze(ctx, batch, p.step)
    return _abandon(ctx, batch, p.step)


def _prepare(ctx: RuleContext, batch_id: str, step: PrepareBatch) -> CommandResult:
    changes = ctx.changes
    require(changes.get(STATE, batch_key(batch_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"batch {batch_id} already exists; a batch ID is never reused")
    if step.parent_batch_id is not None:
        batches.load_batch(changes, step.parent_batch_id)
    changes.put_state(batch_key(batch_id), {
        "batch_id": batch_id,
        **step.model_dump(mode="json", exclude={"action"}),
        "state": "preparing",
        "prepared_by": ctx.actor_id,
        "prepared_at_ms": ctx.now_ms,
        "artifact": None,
        "anchor_effect_id": None,
        "transaction_hash": None,
        "ledger_version": None,
        "abandoned": None,
        "correlation_id": f"batch:{step.parent_batch_id or batch_id}",
        "created": created(ctx),
    })
    changes.event("BatchPrepared", batch_id=batch_id, kind=step.kind, parent_batch_id=step.parent_batch_id)
    return {"batch_id": batch_id, "state": "preparing"}


def _freeze(ctx: RuleContext, batch: Batch, step: FreezeBatch) -> CommandResult:
    changes = ctx.changes
    require(step.artifact_hash in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
            "the artifact hash must be listed in the envelope's evidence_hashes")
    if batch["kind"] == "statement_index":
        require(len(step.statements) == step.count, ErrorCode.COUNT_MISMATCH,
                f"the index counts {step.count} statements but lists {len(step.statements)}")
        if step.statement_root is not None:
            require(step.statement_root == statement_tree_root(step.statements), ErrorCode.CONFLICTING_EVIDENCE,
                    "the statement root is not the tree of the statements' leaf hashes in public-proof-ID order")
        record_statements(changes, batch["batch_id"], step.statements, created(ctx))
    else:
        require(not step.statements and step.statement_root is None, ErrorCode.INVALID_STATE,
                f"a {batch['kind']} batch lists no statements")
    artifact: Artifact = {"ref": step.artifact_ref, "hash": step.artifact_hash, "count": step.count,
                          "frozen_by": ctx.actor_id, "frozen_at_ms": ctx.now_ms, "frozen_sequence": ctx.sequence}
    if step.statement_root is not None:
        artifact["statement_root"] = step.statement_root
    batches.move(changes, batch, "frozen", artifact=artifact, anchor_effect_id=step.anchor_effect_id)
    changes.effect(step.anchor_effect_id, outbox.BATCH_ANCHOR.name, {
        "batch_id": batch["batch_id"], "kind": batch["kind"], "artifact_hash": batches.anchored_hash(artifact),
        "count": step.count,
    })
    return {"batch_id": batch["batch_id"], "state": "frozen", "artifact_hash": step.artifact_hash}


def statement_tree_root(statements: list[Statement]) -> str:
    """RFC 9162 root over the statements' leaf hashes, ordered by public proof ID."""
    require(len({s.public_proof_id for s in statements}) == len(statements) > 0, ErrorCode.INVALID_REFERENCE,
            "a statement tree has at least one statement and distinct public proof IDs")
    frontier = Frontier()
    for statement in sorted(statements, key=lambda s: s.public_proof_id):
        assert statement.leaf_hash is not None, "an index with a statement root has every leaf hash (FreezeBatch)"
        frontier, _ = frontier.append(bytes.fromhex(statement.leaf_hash))
    return frontier.root().hex()


def _abandon(ctx: RuleContext, batch: Batch, step: AbandonBatch) -> CommandResult:
    changes = ctx.changes
    if batch["anchor_effect_id"] is not None:
        anchor = outbox.load_effect(changes, batch["anchor_effect_id"])
        require(anchor["status"] == outbox.PENDING, ErrorCode.INVALID_STATE,
                f"batch {batch['batch_id']}'s anchor is {anchor['status']}: it may be on its way to the chain")
        outbox.cancel(changes, anchor["effect_id"], "batch_abandoned")
    abandoned = {"reason": step.reason, "abandoned_by": ctx.actor_id, "abandoned_at_ms": ctx.now_ms}
    batches.move(changes, batch, "abandoned", abandoned=abandoned)
    return {"batch_id": batch["batch_id"], "state": "abandoned"}


def complete_anchor(ctx: RuleContext, effect: Effect, outcome: str, transaction_hash: str | None) -> CommandResult:
    """The committer's report on submitting the batch's commitment."""
    changes = ctx.changes
    batch = batches.load_batch(changes, effect["payload"]["batch_id"])
    result = {"outcome": outcome, "transaction_hash": transaction_hash}
    if outcome == "failed":
        batches.move(changes, batch, "failed")
        outbox.reopen(changes, effect["effect_id"], result)
    else:
        batches.move(changes, batch, "submitted" if outcome == "submitted" else "uncertain",
                     transaction_hash=transaction_hash)
        outbox.finish(changes, effect["effect_id"], result)
    return result


@command("RecordCommitmentObservation", payload=RecordCommitmentObservationPayload, roles={"observer"},
         cites_evidence=True)
def record_commitment_observation(ctx: RuleContext, p: RecordCommitmentObservationPayload) -> CommandResult:
    changes = ctx.changes
    outbox.require_worker_of(ctx, outbox.BATCH_ANCHOR, "a commitment's chain observation")
    require(p.evidence_digest in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
            "the observation's evidence digest must be listed in the envelope's evidence_hashes")
    batch = batches.load_batch(changes, p.batch_id)
    artifact = require_present(batch["artifact"], ErrorCode.INVALID_STATE, f"batch {p.batch_id} is not frozen")
    anchor_effect_id = batch["anchor_effect_id"]
    assert anchor_effect_id is not None, f"frozen batch {p.batch_id} names its anchor effect"
    require(p.artifact_hash == batches.anchored_hash(artifact), ErrorCode.CONFLICTING_EVIDENCE,
            f"batch {p.batch_id} anchors {batches.anchored_hash(artifact)}, not {p.artifact_hash}")
    if batch["state"] in ("confirmed", "failed") and batch["transaction_hash"] == p.transaction_hash:
        require(p.outcome == batch["state"], ErrorCode.CONFLICTING_EVIDENCE,
                f"transaction {p.transaction_hash} was already observed {batch['state']}")
        return {"batch_id": p.batch_id, "state": batch["state"], "changed": False}
    require(batch["state"] != "confirmed", ErrorCode.CONFLICTING_EVIDENCE,
            f"batch {p.batch_id} is already confirmed by transaction {batch['transaction_hash']}")
    journal_tree = None
    if p.journal_tree is not None:
        require(p.journal_tree.size < ctx.sequence, ErrorCode.INVALID_REFERENCE,
                f"a commitment anchors journal entries already written, not {p.journal_tree.size} at {ctx.sequence}")
        journal_tree = p.journal_tree.model_dump(mode="json")
    if p.outcome == "confirmed":
        # As for payments (ADR 0020): an observer alone never settles what no worker of the effect's kind took up.
        require(outbox.load_effect(changes, anchor_effect_id)["attempts"] > 0, ErrorCode.INVALID_STATE,
                f"batch {p.batch_id}'s commitment was never claimed by a committer")
        batches.move(changes, batch, "confirmed", transaction_hash=p.transaction_hash, ledger_version=p.ledger_version,
                     journal_tree=journal_tree)
        outbox.finish(changes, anchor_effect_id, {"observed": "confirmed", "transaction_hash": p.transaction_hash})
    else:
        require(p.transaction_hash == batch["transaction_hash"], ErrorCode.INVALID_REFERENCE,
                f"batch {p.batch_id} was last submitted as {batch['transaction_hash']}")
        batches.move(changes, batch, "failed", ledger_version=p.ledger_version)
        outbox.reopen(changes, anchor_effect_id, {"observed": "failed", "transaction_hash": p.transaction_hash})
    changes.event("CommitmentObserved", batch_id=p.batch_id, transaction_hash=p.transaction_hash,
                  outcome=p.outcome, ledger_version=p.ledger_version, evidence_digest=p.evidence_digest,
                  **({"journal_tree": journal_tree} if journal_tree is not None else {}))
    return {"batch_id": p.batch_id, "state": p.outcome, "changed": True}
