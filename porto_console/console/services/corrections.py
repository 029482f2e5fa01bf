"""Corrections of allocation lines: one finance user requests, another approves or declines.

The request's correction ID derives from its form's command ID
(``correction-<command ID>``) and its replacement lines are numbered after it,
so a retried form requests nothing twice. Approval restates the request hash
the approver was shown: the ledger refuses any other content.
"""

from __future__ import annotations

from typing import Any, get_args

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.commands.money.corrections import DeclineReason, Reason
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.projections import budget_queries, correction_queries
from porto_console.console.commands import CommandRequest

STATUSES = ("requested", "approved", "declined")
REASONS = get_args(Reason)
DECLINE_REASONS = get_args(DeclineReason)


def correction_id_for(command_id: str) -> str:
    return f"correction-{command_id}"


def budget_ids(ledger: LedgerOwner) -> list[str]:
    return budget_queries.budget_ids(ledger.view())


def corrections(ledger: LedgerOwner, status: str) -> list[dict[str, Any]]:
    return correction_queries.corrections(ledger.view(), status)


def correction(ledger: LedgerOwner, correction_id: str) -> dict[str, Any] | None:
    """The request as frozen, and each line it names as it is now."""
    view = ledger.view()
    request = correction_queries.request(view, correction_id)
    if request is None:
        return None
    return {"correction": request, "lines_now": correction_queries.lines_now(view, request)}


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
    request = correction_queries.request(ledger.view(), correction_id)
    if request is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"correction {correction_id} does not exist")
    return CommandRequest("DecideCorrection", {"correction_id": correction_id,
                                               "request_hash": request["request_hash"], "action": "decline",
                                               "decline_reason": reason})
