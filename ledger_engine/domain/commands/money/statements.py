"""Recipient statements, frozen in a statement-index batch, and what a payout approval needs of them.

A statement summarises one recipient's allocations in one accounting batch
(an allocation or correction batch). Its full artifact is private; the ledger
keeps its hash and a public proof ID, which is random and unlinkable across
periods, so both are unique. ``statement/<statement_id>`` is written when the
index batch listing it is frozen; a payout may be approved only on statements
whose index batch is confirmed on chain, and only if they cover every line it
pays: each line is in a named statement of its recipient whose accounting
batch was frozen after the line was created, with the line's day in the
batch's window. A statement frozen before a line existed says nothing of it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from pydantic import Field

from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.commands.money.batches import ACCOUNTING_KINDS, UNANCHORED, load_batch
from ledger_engine.domain.commands.money.lines import load_line
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.domain.commands.money.recipients import load_recipient
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.registry import Payload
from ledger_engine.domain.schema.money_allocation import AllocationLine, Created
from ledger_engine.domain.schema.money_payouts import Batch, PlannedPayment, statement_key
from ledger_engine.domain.schema.money_payouts import Statement as StatementRecord
from ledger_engine.domain.types import Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE


class Statement(Payload):
    statement_id: Identifier
    recipient_id: Identifier
    accounting_batch_id: Identifier
    artifact_hash: Digest
    public_proof_id: Identifier = Field(min_length=16)
    # The statement's leaf hash in its index's statement tree (docs/merkle.md); absent in an index without one.
    leaf_hash: Digest | None = None


def record_statements(changes: Changes, index_batch_id: str, statements: list[Statement],
                      created_by: Created) -> None:
    for statement in statements:
        load_recipient(changes, statement.recipient_id)
        accounting = load_batch(changes, statement.accounting_batch_id)
        require(accounting["kind"] in ACCOUNTING_KINDS and accounting["state"] not in UNANCHORED,
                ErrorCode.INVALID_REFERENCE,
                f"statement {statement.statement_id}: batch {statement.accounting_batch_id} is not a frozen accounting batch")
        require(changes.get(STATE, statement_key(statement.statement_id)) is None, ErrorCode.ALREADY_EXISTS,
                f"statement {statement.statement_id} already exists")
        changes.claim_unique(key("statement", statement.recipient_id, statement.accounting_batch_id),
                             {"statement_id": statement.statement_id}, ErrorCode.ALREADY_EXISTS,
                             f"recipient {statement.recipient_id} already has a statement for batch "
                             f"{statement.accounting_batch_id}")
        changes.claim_unique(key("public_proof", statement.public_proof_id), {"statement_id": statement.statement_id},
                             ErrorCode.ALREADY_EXISTS, f"public proof ID {statement.public_proof_id} is taken")
        changes.put_state(statement_key(statement.statement_id), {
            **statement.model_dump(mode="json"), "index_batch_id": index_batch_id,
            "correlation_id": f"batch:{index_batch_id}", "created": created_by})


def require_confirmed_statements(changes: Changes, statement_ids: list[str],
                                 planned: Sequence[PlannedPayment]) -> None:
    """Confirmed statements of exactly the run's recipients, covering every line of every payment."""
    batches_of: dict[str, list[Batch]] = defaultdict(list)
    for statement_id in statement_ids:
        statement = load(changes, statement_key(statement_id), f"statement {statement_id}", StatementRecord)
        index = load_batch(changes, statement["index_batch_id"])
        require(index["state"] == "confirmed", ErrorCode.INVALID_STATE,
                f"statement {statement_id} is in batch {index['batch_id']}, which is {index['state']}, not confirmed")
        batches_of[statement["recipient_id"]].append(load_batch(changes, statement["accounting_batch_id"]))
    recipient_ids = {payment["recipient_id"] for payment in planned}
    extra = sorted(set(batches_of) - recipient_ids)
    require(not extra, ErrorCode.INVALID_REFERENCE, f"statements for recipients {extra} who are not in the run")
    for payment in planned:
        for line_id in payment["line_ids"]:
            line = load_line(changes, line_id)
            require(any(covers(batch, line) for batch in batches_of[payment["recipient_id"]]),
                    ErrorCode.INVALID_REFERENCE,
                    f"allocation line {line_id} of {payment['recipient_id']} is in no confirmed statement named: "
                    "none was frozen after the line, over its day")


def covers(batch: Batch, line: AllocationLine) -> bool:
    """Whether an accounting batch's statements can speak for ``line``: frozen after it, over its day."""
    artifact, created = batch["artifact"], line.get("created")
    frozen_sequence = artifact.get("frozen_sequence") if artifact else None
    created_sequence = created.get("sequence") if created else None
    if frozen_sequence is None or created_sequence is None:
        return False
    return created_sequence < frozen_sequence and batch["window_start_ms"] <= line["day"] * DAY_MS < batch["window_end_ms"]
