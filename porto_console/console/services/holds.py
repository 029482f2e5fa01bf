"""Decisions on holds as ops takes them; the screens read the open queue and a hold's evidence through the
streaming and listing selectors.

A decision's free-text note is cited as evidence, stored when the decision is submitted; the command carries
only its digest. A bulk decision is one command per hold, each with its own
command ID derived from the bulk form's and the hold ID (``derived_command_id``),
so a retried bulk form decides nothing twice.
"""

from __future__ import annotations

from typing import get_args

from ledger_engine.adapters.gateway import derived_command_id
from ledger_engine.domain.commands.streaming.holds import DecisionReason, HoldReason
from ledger_engine.errors import ErrorCode
from ledger_engine.open_json import Unvalidated
from ledger_engine.selectors import streaming_queries
from porto_console.console.commands import CommandRequest, cited_note

HOLD_REASONS = tuple(str(reason) for reason in HoldReason)
DECISION_REASONS = get_args(DecisionReason)
MISMATCH = str(ErrorCode.HOLD_REASON_MISMATCH)
DECISIONS = {"release": "released", "reject": "rejected"}  # decision -> the hold's status after it


def decide(hold_id: str, decision: str, reason: str, seen_revision: int, note: str = "") -> CommandRequest:
    payload: Unvalidated = {"hold_id": hold_id, "decision": decision, "reason": reason}
    evidence = cited_note(payload, note)
    return CommandRequest("DecideHold", payload, evidence=evidence,
                          expected_revisions=[streaming_queries.expected_hold_revision(hold_id, seen_revision)])


def bulk_command_id(bulk_id: str, hold_id: str) -> str:
    return derived_command_id(bulk_id, hold_id)
