"""Holds as ops reviews them: the open queue by age and reason, a hold's evidence, and decisions.

A decision's free-text note is cited as evidence, stored when the decision is submitted; the command carries
only its digest. A bulk decision is one command per hold, each with its own
command ID derived from the bulk form's and the hold ID (``derived_command_id``),
so a retried bulk form decides nothing twice.
"""

from __future__ import annotations

from typing import Any, Iterator, get_args

from ledger_engine.adapters.gateway import derived_command_id
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.commands.streaming.holds import DecisionReason, HoldReason
from ledger_engine.errors import ErrorCode
from ledger_engine.selectors import listing_queries, streaming_queries
from porto_console.console.commands import CommandRequest, cited_note

HOLD_REASONS = tuple(str(reason) for reason in HoldReason)
DECISION_REASONS = get_args(DecisionReason)
MISMATCH = str(ErrorCode.HOLD_REASON_MISMATCH)
DECISIONS = {"release": "released", "reject": "rejected"}  # decision -> the hold's status after it


def every_open(ledger: LedgerOwner, reason: str) -> Iterator[dict[str, Any]]:
    """The open queue, oldest first; the screen searches, sorts and pages it."""
    return listing_queries.every_open_hold(ledger.view(), reason=reason or None)


def counts(ledger: LedgerOwner) -> dict[str, int]:
    return streaming_queries.open_hold_counts(ledger.view())


def detail(ledger: LedgerOwner, hold_id: str) -> streaming_queries.HoldDetail | None:
    """The hold, its receipt, and everything recorded about its session."""
    return streaming_queries.hold_detail(ledger.view(), hold_id)


def decide(hold_id: str, decision: str, reason: str, seen_revision: int, note: str = "") -> CommandRequest:
    payload: dict[str, Any] = {"hold_id": hold_id, "decision": decision, "reason": reason}
    evidence = cited_note(payload, note)
    return CommandRequest("DecideHold", payload, evidence=evidence,
                          expected_revisions=[streaming_queries.expected_hold_revision(hold_id, seen_revision)])


def bulk_command_id(bulk_id: str, hold_id: str) -> str:
    return derived_command_id(bulk_id, hold_id)


def current_revision(ledger: LedgerOwner, hold_id: str) -> int | None:
    return streaming_queries.hold_revision(ledger.view(), hold_id)
