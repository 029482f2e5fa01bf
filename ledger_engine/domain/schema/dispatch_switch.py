"""Whether workers may carry out effects, as ledger state: the switch and its resume requests (docs/adr/0091)."""

from __future__ import annotations

from typing import Literal, TypedDict

from ledger_engine.keys import key
from ledger_engine.open_json import RecordData

SWITCH_KEY = key("dispatch_switch")
PENDING_RESUME_SENTINEL = key("dispatch_resume_pending")


class DispatchSwitch(TypedDict):
    """No record: dispatch has never been paused."""

    status: Literal["running", "paused"]
    reason: str  # why it was paused, or why it was resumed
    changed_by: str  # who paused it, or who approved the resume
    changed_at_ms: int
    requested_by: str | None  # who asked for the resume; None for a pause
    resume_id: str | None


class DispatchResume(TypedDict):
    resume_id: str
    reason: str
    status: Literal["pending", "approved", "declined", "expired"]
    requested_by: str
    requested_at_ms: int
    expires_at_ms: int
    decision: RecordData | None  # decided_by, decided_at_ms, reason (a decline's code)


def resume_key(resume_id: str) -> str:
    return key("dispatch_resume", resume_id)
