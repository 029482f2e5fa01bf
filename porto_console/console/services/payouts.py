"""Payout runs as finance works them: what can be paid, preparing, approving and cancelling a run.

Preparing freezes exactly what the preparer was shown: the form carries a
digest of the payables it displayed, and the command is refused before it is
built if they changed meanwhile. A run's IDs derive from the form's
command ID (``run-<command ID>``; payment and effect IDs are UUIDv5 of that
ID and the recipient), so a retried form builds the very same command.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import asdict, dataclass, replace
from typing import Any, Iterator

from ledger_engine.amounts import checked_sum, format_amount, parse_amount
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.canonical import canonical_bytes, sha256_hex
from ledger_engine.domain.commands.accounts import recipient_key
from ledger_engine.domain.commands.money.batches import batch_key
from ledger_engine.domain.commands.money.payments import UNSIGNED
from ledger_engine.domain.commands.money.payout_runs import frozen_run, run_hash, run_key
from ledger_engine.keys import key
from ledger_engine.layout import INDEXES, STATE
from ledger_engine.projections import payout_queries
from ledger_engine.projections.payouts import payment_state_prefix, run_status_prefix
from porto_console.console.commands import CommandRequest
from porto_console.ledger import gateway
from porto_console.console.services.rows import records, rows

ASSET = "USDC"
RUN_STATUSES = ("prepared", "approved", "cancelled", "invalidated")
OPEN, ALL = "open", "all"
OPEN_STATUSES = ("prepared", "approved")  # the runs a cancel can still end
UNSIGNED_STATES = UNSIGNED  # payments a cancel ends; a cancel is refused while one is signed
PAYMENT_STATES = ("prepared", "approved", "held", "signed", "submitted", "uncertain", "failed", "confirmed",
                  "cancelled")


class PlanChanged(Exception):
    """The payables differ from what the form showed."""


@dataclass(frozen=True)
class Payable:
    """What one recipient is owed and could be paid in a run now."""

    recipient_id: str
    line_ids: list[str]
    amount: int
    version: int
    payout_address: str
    statement_id: str | None  # the newest statement in a confirmed index batch, which approval cites


def payables(ledger: LedgerOwner) -> list[Payable]:
    """Every recipient with payable allocation lines, by recipient ID."""
    lines: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for index_key, line in rows(ledger, INDEXES, key("payable_line") + "/"):
        _, recipient_id, line_id = index_key.split("/")
        lines[recipient_id].append((line_id, parse_amount(line["amount"])))
    statements = confirmed_statements(ledger)
    found = []
    for recipient_id in sorted(lines):
        recipient = ledger.get(STATE, recipient_key(recipient_id)).data
        found.append(Payable(recipient_id, sorted(line_id for line_id, _ in lines[recipient_id]),
                             checked_sum(amount for _, amount in lines[recipient_id]), recipient["version"],
                             recipient["payout_address"], statements.get(recipient_id)))
    return found


def confirmed_statements(ledger: LedgerOwner) -> dict[str, str]:
    """Each recipient's newest statement whose index batch is confirmed (statement IDs in key order)."""
    newest: dict[str, str] = {}
    for _key, _revision, statement in records(ledger, "statement/"):
        batch = ledger.get(STATE, batch_key(statement["index_batch_id"]))
        if batch is not None and batch.data["state"] == "confirmed":
            newest[statement["recipient_id"]] = statement["statement_id"]
    return newest


def derived_id(command_id: str, *parts: str) -> str:
    return str(uuid.uuid5(uuid.UUID(command_id), ":".join(parts)))


def run_id_for(command_id: str) -> str:
    return f"run-{command_id}"


def plan(command_id: str, chosen: list[Payable]) -> dict[str, Any]:
    """The PreparePayoutRun payload paying each chosen recipient all its payable lines."""
    run_id = run_id_for(command_id)
    planned = sorted(({"payment_id": derived_id(command_id, "payment", payable.recipient_id),
                       "effect_id": derived_id(command_id, "effect", payable.recipient_id),
                       "recipient_id": payable.recipient_id, "recipient_version": payable.version,
                       "amount": format_amount(payable.amount), "line_ids": payable.line_ids} for payable in chosen),
                     key=lambda payment: payment["payment_id"])
    addresses = {payable.recipient_id: payable.payout_address for payable in chosen}
    frozen = frozen_run(run_id, ASSET, [{**payment, "payout_address": addresses[payment["recipient_id"]]}
                                        for payment in planned])
    return {"run_id": run_id, "asset": ASSET, "payments": planned, "run_hash": run_hash(frozen)}


def payables_digest(shown: list[Payable]) -> str:
    """A digest of the payables as a form shows them, to notice that they changed before it is submitted."""
    return sha256_hex(canonical_bytes([asdict(payable) for payable in shown]))


def prepare(ledger: LedgerOwner, command_id: str, recipient_ids: list[str], seen_payables: str) -> CommandRequest:
    """PreparePayoutRun for the chosen recipients, if the payables are still what the form showed."""
    current = payables(ledger)
    if payables_digest(current) != seen_payables:
        raise PlanChanged("The payables changed since the form was shown; review them again.")
    chosen = [payable for payable in current if payable.recipient_id in recipient_ids]
    return CommandRequest("PreparePayoutRun", plan(command_id, chosen))


def approve(ledger: LedgerOwner, run_id: str, seen_hash: str) -> CommandRequest:
    """ApprovePayoutRun restating the hash the approver saw, citing confirmed statements covering every line."""
    cited = payout_queries.covering_statements(ledger.store, run_id)["statement_ids"]
    return CommandRequest("ApprovePayoutRun", {"run_id": run_id, "run_hash": seen_hash, "statement_ids": cited})


def cancel(run_id: str, reason: str, seen_revision: int, note: str = "") -> CommandRequest:
    """The note, if any, is stored as evidence first; the command carries its digest."""
    payload: dict[str, Any] = {"run_id": run_id, "reason": reason}
    if note:
        payload["note_digest"] = gateway().evidence.put(note.encode())
    return CommandRequest("CancelPayoutRun", payload, evidence_hashes=[payload["note_digest"]] if note else [],
                          expected_revisions=[{"cf": STATE, "key": run_key(run_id), "revision": seen_revision}])


def run_revision(ledger: LedgerOwner, run_id: str) -> int | None:
    record = ledger.get(STATE, run_key(run_id))
    return record.revision if record else None


def cancel_note(run: dict[str, Any]) -> str:
    """The canceller's note, read back from evidence; empty when there is none."""
    digest = (run.get("tombstone") or {}).get("note_digest")
    return gateway().evidence.get(digest).decode() if digest else ""


def runs_in(ledger: LedgerOwner, choice: str) -> Iterator[dict[str, Any]]:
    """Runs of one status, or of the statuses a choice names (``open``: still cancellable; ``all``)."""
    for status in {OPEN: OPEN_STATUSES, ALL: RUN_STATUSES}.get(choice, (choice,)):
        yield from runs(ledger, status)


def runs(ledger: LedgerOwner, status: str) -> Iterator[dict[str, Any]]:
    for index_key, entry in rows(ledger, INDEXES, run_status_prefix(status)):
        yield {"run_id": index_key.rsplit("/", 1)[1], "status": status, **entry}


def payments(ledger: LedgerOwner, state: str) -> Iterator[dict[str, Any]]:
    for index_key, entry in rows(ledger, INDEXES, payment_state_prefix(state)):
        yield {"payment_id": index_key.rsplit("/", 1)[1], "state": state, **entry}


def missing_statements(ledger: LedgerOwner, run_id: str) -> list[str]:
    """Each line of the run no confirmed statement covers yet, as ``recipient: line``."""
    return [f"{item['recipient_id']}: {item['line_id']}"
            for item in payout_queries.covering_statements(ledger.store, run_id)["uncovered"]]


def with_aggregates(ledger: LedgerOwner, page):
    """A page of runs, each with its true aggregate state (what became of its payments)."""
    aggregates = payout_queries.run_aggregates(ledger.store, [run["run_id"] for run in page.items])
    return replace(page, items=[{**run, "aggregate": aggregates[run["run_id"]]} for run in page.items])


def total(payables_list: list[Payable]) -> str:
    return format_amount(checked_sum(payable.amount for payable in payables_list))
