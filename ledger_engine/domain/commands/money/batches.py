"""Artifact batches and the state machine they follow (docs/spec/domain-model-and-state-machines.md §4).

    preparing -> frozen -> submitted -> confirmed
    failed: retryable with the same payload (the anchor effect is reopened)
    uncertain: the anchor's answer was lost; a commitment observation resolves it
    abandoned: a frozen (or failed) batch given up before it was anchored, keeping its ID and reason

``batch/<batch_id>`` is created once and never deleted, so an abandoned ID can
never be prepared again, let alone frozen with other bytes. Its artifact
(reference, hash, count) is written once, at freeze; a correction is a new
batch naming its parent.
"""

from __future__ import annotations

from typing import Any

from ledger_engine.domain.changes import Changes
from ledger_engine.domain.commands.money.lifecycle import StateMachine, load
from ledger_engine.domain.schema.money_payouts import Artifact, Batch, batch_key

KINDS = ("allocation", "statement_index", "correction")
ACCOUNTING_KINDS = ("allocation", "correction")
MACHINE = StateMachine("BatchStateChanged", {
    "preparing": frozenset({"frozen"}),
    "frozen": frozenset({"submitted", "uncertain", "failed", "confirmed", "abandoned"}),
    "submitted": frozenset({"confirmed", "failed"}),
    "uncertain": frozenset({"confirmed", "failed"}),
    "failed": frozenset({"submitted", "uncertain", "confirmed", "abandoned"}),
    "confirmed": frozenset(),
    "abandoned": frozenset(),
})
UNANCHORED = ("preparing", "abandoned")


def load_batch(changes: Changes, batch_id: str) -> Batch:
    return load(changes, batch_key(batch_id), f"batch {batch_id}", Batch)


def move(changes: Changes, batch: Batch, state: str, **fields: Any) -> Batch:
    subject = {"batch_id": batch["batch_id"], "kind": batch["kind"]}
    return MACHINE.move(changes, batch_key(batch["batch_id"]), batch, state, subject=subject, **fields)


def anchored_hash(artifact: Artifact) -> str:
    """What the batch's commitment anchors: its statement tree's root if it has one, else its artifact hash."""
    return artifact.get("statement_root") or artifact["hash"]
