"""Demo stage 4: statements, payout runs, a recipient update, payments and effects, paying the allocation stage's lines.

Everything from outside the ledger is a fixture: artifact bytes, signed
transactions, chain observations and their evidence are digests from
``fixture_digest``, transaction hashes are ``0x`` + such a digest, and the
sender is the fixture address ``demo-treasury``. The stage:

1. freezes and anchors an allocation batch and a statement index (the index's
   first anchor attempt fails and is retried), and abandons a superseded batch;
2. prepares a run for the first two recipients that a recipient update then
   invalidates: demo-finance-1 requests a new address for one of them,
   demo-finance-2 approves it, and the ledger prepares the run again at the
   new address; demo-finance-3 approves that one (four eyes: not
   demo-finance-2, whose approval prepared it, nor demo-finance-1, who chose
   what the unapproved run paid);
3. prepares a run and cancels it;
4. prepares the run that pays the other payable lines (demo-finance-1) and
   approves it (demo-finance-2), putting one ``payment.transfer`` intent per
   payment in the outbox;
5. pays both approved runs: demo-dispatcher, the payment worker, claims,
   records signed attempts under its claim and reports broadcasts, and
   demo-observer, its second credential, records the chain observations (a
   signer never attests its own payments; demo-committer observes its own
   commitments). One
   payment fails (its attempt expires) and is retried, one loses its
   broadcast answer and is reconciled, and the last stays queued in the
   outbox;
6. prepares one more run (demo-finance-1) for the recipient left out of step 4,
   which waits for a second finance user to approve it in the console; two
   more recipients are in no run, so their lines stay payable for a person to
   prepare a run of their own.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Callable, NamedTuple, Sequence

from ledger_engine.canonical import canonical_bytes, sha256_hex

from ledger_engine.demo.builder import DAY_MS, DemoBuilder, fixture_address, fixture_digest
from ledger_engine.demo.foundation import DISPLAY_NAMES, Cast
from ledger_engine.demo.money import Allocation, PayableLine, by_line_id
from ledger_engine.domain.commands.money.payout_runs import frozen_run, run_hash, successor_id
from ledger_engine.domain.schema.money_payouts import PlannedPayment, run_key
from ledger_engine.layout import OUTBOX, STATE
from ledger_engine.merkle.statement import StatementTree, statement_leaf_hash
from ledger_engine.open_json import RecordData, Unvalidated
from ledger_engine.projections.day_line_evidence import commitments
from ledger_engine.selectors.statement_index import index_artifact, statement_document

PREPARER, APPROVER, THIRD_APPROVER = "demo-finance-1", "demo-finance-2", "demo-finance-3"
DISPATCHER, OBSERVER, COMMITTER = "demo-dispatcher", "demo-observer", "demo-committer"
SENDER = fixture_address("demo-treasury")
CLAIM_MS = 60_000
UNPAID = 2  # recipients no run names, so a person can prepare and approve a run of their own
SIGNED_TTL_MS = 120_000


class _Payment(NamedTuple):
    payment_id: str
    effect_id: str
    recipient_id: str
    amount: int


class _Attempt(NamedTuple):
    attempt_id: str
    transaction_hash: str
    expires_at_ms: int


class _Stage:
    """The builder, plus what the ledger will hold that later envelopes must name."""

    def __init__(self, builder: DemoBuilder, allocation: Allocation) -> None:
        self.builder = builder
        self.lines: dict[str, list[PayableLine]] = defaultdict(list)
        for line in allocation.payable:
            assert line.recipient_id is not None, line.line_id  # a payable line pays someone; Porto's are retained
            self.lines[line.recipient_id].append(line)
        self.recipients = {recipient: (1, fixture_address(recipient)) for recipient in self.lines}
        days = [line.day for line in allocation.payable]
        self.window = {"window_start_ms": min(days) * DAY_MS, "window_end_ms": (max(days) + 1) * DAY_MS}
        self.effect_revisions: dict[str, int] = {}
        self.sequences = itertools.count()  # the treasury's sender sequence numbers
        self.ledger_versions = itertools.count(1_000)  # the fixture chain's transaction versions

    def add(self, command_type: str, payload: Unvalidated, *, actor: str, effect: str | None = None,
            evidence: Sequence[str] = (), expected: Sequence[Unvalidated] = (), step_up: bool = False) -> None:
        if effect is not None:
            expected = [{"cf": OUTBOX, "key": effect, "revision": self.effect_revisions[effect]}]
        self.builder.add(command_type, payload, actor=actor, evidence=evidence, expected=expected, step_up=step_up)

    def effect_written(self, effect_id: str) -> None:
        self.effect_revisions[effect_id] = self.effect_revisions.get(effect_id, 0) + 1

    # Effects.
    def claim(self, effect_id: str, worker: str) -> None:
        self.add("ClaimEffect", {"effect_id": effect_id, "expires_at_ms": self.builder.clock_ms + 1_000 + CLAIM_MS},
                 actor=worker, effect=effect_id)
        self.effect_written(effect_id)

    def complete(self, effect_id: str, worker: str, outcome: str, transaction_hash: str | None = None) -> None:
        self.add("CompleteEffect", {"effect_id": effect_id, "outcome": outcome, "transaction_hash": transaction_hash},
                 actor=worker, effect=effect_id)
        self.effect_written(effect_id)

    # Batches.
    def batch(self, kind: str, count: int, statements: Sequence[Unvalidated] = (), *,
              tree_of: Callable[[str], tuple[bytes, str]] | None = None) -> tuple[str, str, str]:
        """Prepare and freeze a batch; returns its ID, the hash its commitment anchors and its anchor effect ID.

        ``tree_of(batch_id)`` gives a statement index's artifact bytes and statement root: the artifact is kept
        as evidence, and the root is what the batch anchors.
        """
        batch_id, anchor = self.builder.new_id(), self.builder.new_id()
        artifact_hash, tree = fixture_digest(batch_id, "artifact"), {}
        if tree_of is not None:
            artifact, root = tree_of(batch_id)
            artifact_hash, tree = sha256_hex(artifact), {"statement_root": root}
            self.builder.evidence[artifact_hash] = artifact
        self.add("FreezeArtifact", {"batch_id": batch_id, "step": {"action": "prepare", "kind": kind, **self.window}},
                 actor=PREPARER)
        self.add("FreezeArtifact", {"batch_id": batch_id, "step": {
            "action": "freeze", "artifact_ref": f"demo-fixture-artifact-{batch_id}", "artifact_hash": artifact_hash,
            "count": count, "anchor_effect_id": anchor, "statements": list(statements), **tree}},
            actor=PREPARER, evidence=[artifact_hash])
        self.effect_written(anchor)
        return batch_id, tree.get("statement_root", artifact_hash), anchor

    def anchor(self, batch_id: str, artifact_hash: str, anchor: str) -> None:
        self.claim(anchor, COMMITTER)
        transaction = "0x" + fixture_digest(anchor, "commitment")
        self.complete(anchor, COMMITTER, "submitted", transaction)
        evidence = fixture_digest(anchor, "commitment", "observation")
        self.add("RecordCommitmentObservation", {
            "batch_id": batch_id, "transaction_hash": transaction, "artifact_hash": artifact_hash,
            "outcome": "confirmed", "ledger_version": next(self.ledger_versions), "evidence_digest": evidence},
            actor=COMMITTER, evidence=[evidence])

    # Runs.
    def prepare(self, plan: dict[str, list[PayableLine]]) -> tuple[str, str, dict[str, tuple[str, str]]]:
        """Prepare a run paying each recipient in ``plan``; returns its ID, hash and (payment, effect) IDs."""
        run_id = self.builder.new_id()
        ids = {recipient: (self.builder.new_id(), self.builder.new_id()) for recipient in sorted(plan)}
        frozen = self.planned(ids, plan)
        payments = [{name: value for name, value in payment.items() if name != "payout_address"} for payment in frozen]
        stated = run_hash(frozen_run(run_id, "USDC", frozen))
        self.add("PreparePayoutRun", {"run_id": run_id, "asset": "USDC", "payments": payments, "run_hash": stated},
                 actor=PREPARER)
        return run_id, stated, ids

    def approve(self, run_id: str, stated: str, recipients: list[str], statement_ids: dict[str, str], *,
                approver: str, effects: list[str]) -> None:
        self.add("ApprovePayoutRun", {"run_id": run_id, "run_hash": stated,
                                      "statement_ids": sorted(statement_ids[recipient] for recipient in recipients)},
                 actor=approver, step_up=True)
        for effect_id in effects:
            self.effect_written(effect_id)

    def prepared_again(self, run_id: str, update_id: str, ids: dict[str, tuple[str, str]],
                       plan: dict[str, list[PayableLine]]) -> tuple[str, str, dict[str, tuple[str, str]]]:
        """The run the ledger prepares when an address change invalidates ``run_id`` (payout_runs.readdress)."""
        new_run = successor_id("run", run_id, update_id)
        new_ids = {recipient: (successor_id("payment", payment_id, update_id),
                               successor_id("effect", payment_id, update_id))
                   for recipient, (payment_id, _) in ids.items()}
        return new_run, run_hash(frozen_run(new_run, "USDC", self.planned(new_ids, plan))), new_ids

    def planned(self, ids: dict[str, tuple[str, str]], plan: dict[str, list[PayableLine]]) -> list[PlannedPayment]:
        """Each recipient's payment of its ``plan`` lines, with its (payment, effect) IDs, as the run hash covers it:
        at the recipient's current address, in payment-ID order."""
        payments: list[PlannedPayment] = [{
            "payment_id": ids[recipient][0], "effect_id": ids[recipient][1], "recipient_id": recipient,
            "recipient_version": self.recipients[recipient][0], "amount": str(sum(line.amount for line in lines)),
            "line_ids": sorted(line.line_id for line in lines), "payout_address": self.recipients[recipient][1],
        } for recipient, lines in sorted(plan.items())]
        return sorted(payments, key=lambda payment: payment["payment_id"])

    def update_recipient(self, recipient: str) -> str:
        update_id, (version, _) = self.builder.new_id(), self.recipients[recipient]
        new_address = fixture_address(f"{recipient}-new-wallet")
        evidence = fixture_digest(update_id, "ownership-evidence")
        self.add("UpdateRecipient", {"update_id": update_id, "recipient_id": recipient, "step": {
            "action": "request", "version": version + 1, "payout_address": new_address, "evidence_digest": evidence}},
            actor=PREPARER, evidence=[evidence])
        self.add("UpdateRecipient", {"update_id": update_id, "recipient_id": recipient, "step": {
            "action": "approve", "version": version + 1, "payout_address": new_address}}, actor=APPROVER, step_up=True)
        self.recipients[recipient] = (version + 1, new_address)
        return update_id

    # Payments.
    def attempt(self, payment: _Payment, *, broadcast: str = "submitted", fate: str = "confirmed") -> None:
        """One attempt: the payment worker claims, signs and broadcasts; its observer sees ``fate`` on chain."""
        self.claim(payment.effect_id, DISPATCHER)
        attempt = self.sign(payment)
        self.complete(payment.effect_id, DISPATCHER, broadcast, attempt.transaction_hash)
        if fate == "expired":
            self.builder.advance_to(attempt.expires_at_ms)
        self.observe(payment, attempt, fate)

    def sign(self, payment: _Payment) -> _Attempt:
        attempt_id = self.builder.new_id()
        attempt = _Attempt(attempt_id, "0x" + fixture_digest(attempt_id, "tx"), self.builder.clock_ms + 1_000 + SIGNED_TTL_MS)
        signed_hash = fixture_digest(attempt.attempt_id, "signed-bytes")
        self.add("RecordSignedAttempt", {
            "payment_id": payment.payment_id, "attempt_id": attempt.attempt_id, "claimed_by": DISPATCHER,
            "payout_address": self.recipients[payment.recipient_id][1], "amount": str(payment.amount),
            "sender_address": SENDER, "sender_sequence": next(self.sequences),
            "signed_bytes_ref": f"demo-fixture-signed-{attempt.attempt_id}", "signed_bytes_hash": signed_hash,
            "transaction_hash": attempt.transaction_hash, "expires_at_ms": attempt.expires_at_ms,
        }, actor=DISPATCHER, evidence=[signed_hash])
        return attempt

    def observe(self, payment: _Payment, attempt: _Attempt, fate: str) -> None:
        evidence = fixture_digest(attempt.attempt_id, fate, "observation")
        self.add("RecordTransferObservation", {
            "payment_id": payment.payment_id, "attempt_id": attempt.attempt_id,
            "transaction_hash": attempt.transaction_hash, "outcome": fate, "ledger_version": next(self.ledger_versions),
            "chain_time_ms": max(self.builder.clock_ms, attempt.expires_at_ms), "evidence_digest": evidence,
        }, actor=OBSERVER, evidence=[evidence])
        if fate in ("failed", "expired"):
            self.effect_written(payment.effect_id)  # reopened for the retry


def build_payouts(builder: DemoBuilder, cast: Cast, allocation: Allocation) -> None:
    if not allocation.payable:
        return  # nothing was allocated, so there is nothing to pay
    stage = _Stage(builder, allocation)
    recipients = sorted(stage.lines)
    titles = {work["work_id"]: work["title"] for work in cast.works}  # as the works' records hold them
    statement_ids = _statements(stage, allocation, titles)

    first = {recipient: stage.lines[recipient] for recipient in recipients[:2]}
    invalidated, _, first_ids = stage.prepare(first)
    update_id = stage.update_recipient(recipients[min(1, len(recipients) - 1)])
    readdressed, readdressed_hash, readdressed_ids = stage.prepared_again(invalidated, update_id, first_ids, first)
    stage.approve(readdressed, readdressed_hash, sorted(first), statement_ids, approver=THIRD_APPROVER,
                  effects=[effect_id for _, effect_id in readdressed_ids.values()])

    rest = recipients[2:]
    if rest:
        cancelled_run, _, _ = stage.prepare({rest[0]: stage.lines[rest[0]]})
        stage.add("CancelPayoutRun", {"run_id": cancelled_run, "reason": "prepared_in_error"}, actor=PREPARER,
                  expected=[{"cf": STATE, "key": run_key(cancelled_run), "revision": 1}])
    waiting = rest[-1] if len(rest) > 1 else None  # left for a person to approve in the console
    unpaid = set(rest[-1 - UNPAID:-1]) if len(rest) > UNPAID + 2 else set()  # left for a person to prepare
    paid = [recipient for recipient in rest if recipient != waiting and recipient not in unpaid]
    ids = dict(readdressed_ids)
    if paid:
        run_id, stated, paid_ids = stage.prepare({recipient: stage.lines[recipient] for recipient in paid})
        stage.approve(run_id, stated, paid, statement_ids, approver=APPROVER,
                      effects=[effect_id for _, effect_id in paid_ids.values()])
        ids.update(paid_ids)
    order = [*sorted(first), *paid]
    to_pay = order[:-1] if len(order) > 2 else order  # the last one stays queued in the outbox
    for number, recipient in enumerate(to_pay):
        payment = _Payment(*ids[recipient], recipient, sum(line.amount for line in stage.lines[recipient]))
        if number == 0:
            stage.attempt(payment, fate="expired")  # the first attempt never lands; the retry does
        stage.attempt(payment, broadcast="unknown" if number == 1 else "submitted")
    if waiting is not None:
        stage.prepare({waiting: stage.lines[waiting]})


def _line_at_freeze(line: PayableLine) -> RecordData:
    """A payable line's record as the statement index reads it when frozen (before any payout); a day line's with
    its chunk, and no correction in its chain."""
    fields = {"line_id": line.line_id, "day": line.day, "role": line.role, "amount": str(line.amount),
              "status": "payable", "work_id": line.work_id, "node_id": line.node_id}
    if line.artifact is not None:
        fields.update(recipient_id=line.recipient_id, artifact=line.artifact, correction_id=None)
    return {name: value for name, value in fields.items() if value is not None or name == "correction_id"}


def _statements(stage: _Stage, allocation: Allocation, titles: dict[str, str]) -> dict[str, str]:
    """Anchor the allocation batch and a statement index over it; abandon a superseded draft of the index. Its
    statements are the ones ``prepare_statement_index`` would build: a line of a titled work names the title, and
    a named recipient's statement its display name."""
    batch_id, artifact_hash, anchor = stage.batch("allocation", len(allocation.payable))
    stage.anchor(batch_id, artifact_hash, anchor)
    draft_id, _, draft_anchor = stage.batch("statement_index", 0)
    stage.add("FreezeArtifact", {"batch_id": draft_id, "step": {"action": "abandon", "reason": "superseded"}},
              actor=PREPARER)
    stage.effect_written(draft_anchor)
    accounting = {"batch_id": batch_id, **stage.window}
    lines = {recipient: [_line_at_freeze(line) for line in sorted(stage.lines[recipient], key=by_line_id)]
             for recipient in sorted(stage.lines)}
    day_lines = [line for recipient_lines in lines.values() for line in recipient_lines if "artifact" in line]
    parts = commitments(lambda record_key: None, stage.builder.evidence.__getitem__, day_lines)
    documents = [statement_document(stage.builder.new_id(), recipient, accounting, lines[recipient], parts, titles,
                                    DISPLAY_NAMES.get(recipient)) for recipient in sorted(stage.lines)]
    statements = [{"statement_id": stage.builder.new_id(), "recipient_id": document["recipient_id"],
                   "accounting_batch_id": batch_id, "artifact_hash": sha256_hex(canonical_bytes(document)),
                   "public_proof_id": document["public_proof_id"],
                   "leaf_hash": statement_leaf_hash(document).hex()} for document in documents]
    statements.sort(key=lambda statement: statement["statement_id"])
    tree = StatementTree.build(documents)
    index_id, index_hash, index_anchor = stage.batch(
        "statement_index", len(statements), statements,
        tree_of=lambda index_batch_id: (index_artifact(index_batch_id, batch_id, tree), tree.root))
    stage.claim(index_anchor, COMMITTER)
    stage.complete(index_anchor, COMMITTER, "failed")  # the first submission is refused; retried as it was
    stage.anchor(index_id, index_hash, index_anchor)
    return {statement["recipient_id"]: statement["statement_id"] for statement in statements}
