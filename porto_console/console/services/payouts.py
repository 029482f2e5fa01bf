"""Payout runs as finance works them: what can be paid, preparing, approving and cancelling a run.

Preparing freezes exactly what the preparer was shown: the form carries a
digest of the payables it displayed, and the command is refused before it is
built if they changed meanwhile. A run's IDs derive from the form's
command ID (``run-<command ID>``; payment and effect IDs are UUIDv5 of that
ID and the recipient), so a retried form builds the very same command.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, replace
from typing import Iterator

from ledger_engine.amounts import checked_sum, format_amount
from ledger_engine.canonical import canonical_bytes, sha256_hex
from ledger_engine.domain.commands.money.payments import UNSIGNED
from ledger_engine.domain.commands.money.payout_runs import frozen_run, run_hash
from ledger_engine.domain.schema.money_payouts import PlannedPayment
from ledger_engine.open_json import RecordData, Unvalidated
from ledger_engine.selectors import payout_queries
from ledger_engine.selectors.payout_queries import Payable, RunListing
from ledger_engine.selectors.view import LedgerView
from porto_console.console.commands import CommandRequest, StateMovedOn, cited_note
from porto_console.ledger import gateway

ASSET = "USDC"
RUN_STATUSES = ("prepared", "approved", "cancelled", "invalidated")
OPEN, ALL = "open", "all"
OPEN_STATUSES = ("prepared", "approved")  # the runs a cancel can still end
UNSIGNED_STATES = UNSIGNED  # payments a cancel ends; a cancel is refused while one is signed
PAYMENT_STATES = ("prepared", "approved", "held", "signed", "submitted", "uncertain", "failed", "confirmed",
                  "cancelled")


class PlanChanged(StateMovedOn):
    """The payables differ from what the form showed."""


def derived_id(command_id: str, *parts: str) -> str:
    return str(uuid.uuid5(uuid.UUID(command_id), ":".join(parts)))


def run_id_for(command_id: str) -> str:
    return f"run-{command_id}"


def plan(command_id: str, chosen: list[Payable]) -> Unvalidated:
    """The PreparePayoutRun payload paying each chosen recipient all its payable lines."""
    run_id = run_id_for(command_id)
    frozen = sorted((_planned(command_id, payable) for payable in chosen), key=lambda payment: payment["payment_id"])
    planned = [{name: value for name, value in payment.items() if name != "payout_address"} for payment in frozen]
    return {"run_id": run_id, "asset": ASSET, "payments": planned,
            "run_hash": run_hash(frozen_run(run_id, ASSET, frozen))}


def _planned(command_id: str, payable: Payable) -> PlannedPayment:
    """A chosen recipient's payment as the run hash covers it: the payload's plan and the address it pays."""
    return {"payment_id": derived_id(command_id, "payment", payable.recipient_id),
            "effect_id": derived_id(command_id, "effect", payable.recipient_id),
            "recipient_id": payable.recipient_id, "recipient_version": payable.version,
            "amount": format_amount(payable.amount), "line_ids": payable.line_ids,
            "payout_address": payable.payout_address}


def payables_digest(shown: list[Payable]) -> str:
    """A digest of the payables as a form shows them, to notice that they changed before it is submitted."""
    return sha256_hex(canonical_bytes([asdict(payable) for payable in shown]))


def prepare(current: list[Payable], command_id: str, recipient_ids: list[str], seen_payables: str) -> CommandRequest:
    """PreparePayoutRun for the chosen recipients, if the payables now (``current``) are still what the form
    showed."""
    if payables_digest(current) != seen_payables:
        raise PlanChanged("The payables changed since the form was shown; review them again.")
    chosen = [payable for payable in current if payable.recipient_id in recipient_ids]
    waiting = [f"{payable.recipient_id} (run {payable.waiting_run})" for payable in chosen if payable.waiting_run]
    if waiting:
        raise PlanChanged(f"Already in a run waiting for approval: {', '.join(waiting)}. Approve or cancel that run "
                          "first; a second run over the same lines could never be approved.")
    return CommandRequest("PreparePayoutRun", plan(command_id, chosen))


def approve(run_id: str, seen_hash: str, cited: list[str]) -> CommandRequest:
    """ApprovePayoutRun restating the hash the approver saw, citing the confirmed statements that cover every line
    (``payout_queries.approval_citations``)."""
    return CommandRequest("ApprovePayoutRun", {"run_id": run_id, "run_hash": seen_hash, "statement_ids": cited})


def cancel(run_id: str, reason: str, seen_revision: int, note: str = "") -> CommandRequest:
    """The note, if any, is cited as evidence; the command carries its digest."""
    payload: Unvalidated = {"run_id": run_id, "reason": reason}
    evidence = cited_note(payload, note)
    return CommandRequest("CancelPayoutRun", payload, evidence=evidence,
                          expected_revisions=[payout_queries.expected_run_revision(run_id, seen_revision)])


def cancel_note(run: RecordData) -> str:
    """The canceller's note, read back from evidence; empty when there is none."""
    digest = (run.get("tombstone") or {}).get("note_digest")
    return gateway().evidence.get(digest).decode() if digest else ""


def runs_in(view: LedgerView, choice: str) -> Iterator[RunListing]:
    """Runs of one status, or of the statuses a choice names (``open``: still cancellable; ``all``)."""
    for status in {OPEN: OPEN_STATUSES, ALL: RUN_STATUSES}.get(choice, (choice,)):
        yield from payout_queries.runs(view, status)


def with_aggregates(view: LedgerView, page):
    """A page of runs, each with its true aggregate state (what became of its payments)."""
    aggregates = payout_queries.run_aggregates(view, [run.run_id for run in page.items])
    return replace(page, items=[replace(run, aggregate=aggregates[run.run_id]) for run in page.items])


def total(payables_list: list[Payable]) -> str:
    return format_amount(checked_sum(payable.amount for payable in payables_list))
