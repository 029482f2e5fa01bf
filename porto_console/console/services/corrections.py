"""Corrections of allocation lines: one finance user requests, another approves or declines.

The request's correction ID derives from its form's command ID
(``correction-<command ID>``) and its replacement lines are numbered after it,
so a retried form requests nothing twice. Approval restates the request hash
the approver was shown: the ledger refuses any other content.
"""

from __future__ import annotations

from typing import Any, Iterator, get_args

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.commands.money.corrections import DeclineReason, Reason, request_key
from ledger_engine.domain.commands.money.lines import line_key
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import INDEXES, STATE
from ledger_engine.projections.money import correction_request_prefix
from porto_console.console.commands import CommandRequest
from porto_console.console.services.rows import records, rows

STATUSES = ("requested", "approved", "declined")
REASONS = get_args(Reason)
DECLINE_REASONS = get_args(DeclineReason)


def correction_id_for(command_id: str) -> str:
    return f"correction-{command_id}"


def budget_ids(ledger: LedgerOwner) -> list[str]:
    return sorted(budget["budget_id"] for _key, _revision, budget in records(ledger, "budget/"))


def corrections(ledger: LedgerOwner, status: str) -> Iterator[dict[str, Any]]:
    for index_key, entry in rows(ledger, INDEXES, correction_request_prefix(status)):
        yield {"correction_id": index_key.rsplit("/", 1)[1], "status": status, **entry}


def correction(ledger: LedgerOwner, correction_id: str) -> dict[str, Any] | None:
    """The request as frozen, and each line it names as it is now."""
    record = ledger.get(STATE, request_key(correction_id))
    if record is None:
        return None
    request = record.data
    lines = [ledger.get(STATE, line_key(line["line_id"])).data for line in request["reverses"]]
    return {"correction": request, "lines_now": lines}


def request_correction(command_id: str, budget_id: str, reason: str, reverses: list[str],
                       replacements: list[dict[str, Any]], remainder_to: str, refund_unallocated: str) -> CommandRequest:
    correction_id = correction_id_for(command_id)
    numbered = [{**replacement, "line_id": f"{correction_id}-{number}"}
                for number, replacement in enumerate(replacements, start=1)]
    return CommandRequest("RequestCorrection", {
        "correction_id": correction_id, "budget_id": budget_id, "reason": reason, "reverses": sorted(set(reverses)),
        "replacements": numbered, "remainder_to": remainder_to, "refund_unallocated": refund_unallocated})


def approve(correction_id: str, seen_hash: str) -> CommandRequest:
    return CommandRequest("DecideCorrection", {"correction_id": correction_id, "request_hash": seen_hash,
                                               "action": "approve"})


def decline(ledger: LedgerOwner, correction_id: str, reason: str) -> CommandRequest:
    record = ledger.get(STATE, request_key(correction_id))
    if record is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"correction {correction_id} does not exist")
    return CommandRequest("DecideCorrection", {"correction_id": correction_id,
                                               "request_hash": record.data["request_hash"], "action": "decline",
                                               "decline_reason": reason})
