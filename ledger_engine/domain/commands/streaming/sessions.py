"""OpenSession and CloseSession: a listener's one active stream at a time.

The ``active_session/<account>`` sentinel is held while a session is open, so
an account never has two. A session's lease ends at ``expires_at_ms``; each
grant renews it from admission time, and once it has passed the session can
only be closed as ``expired``. Every session joins the activity record of its
listener-day (the UTC day it opened), whose windows let receipts spot
overlapping sessions and whose revision ``CloseDay`` names.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ledger_engine.domain.changes import require
from ledger_engine.domain.commands.streaming.checks import (
    existing, require_absent, require_account, require_not_before,
)
from ledger_engine.domain.schema.streaming import (
    ListenerActivity, Period, Session, SessionWindow, Work, active_session_sentinel, listener_activity_key,
    listener_day_key, period_key, session_key, work_key,
)
from ledger_engine.domain.commands.streaming.policy import MAX_LEASE_MS, day_of
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

CloseReason = Literal["completed", "stopped", "expired"]


class OpenSessionPayload(Payload):
    session_id: Identifier
    account_id: Identifier
    period_id: Identifier
    work_id: Identifier
    rendition_id: Identifier
    lease_ms: int = Field(gt=0, le=MAX_LEASE_MS)


class CloseSessionPayload(Payload):
    session_id: Identifier
    reason: CloseReason


def require_entitled(ctx: RuleContext, account_id: str, period_id: str) -> None:
    """The account's period covers now, its entitlement is active and it was not refunded."""
    period = existing(ctx, period_key(period_id), f"period {period_id}", Period)
    require(period["account_id"] == account_id, ErrorCode.INVALID_REFERENCE,
            f"period {period_id} belongs to another account")
    require(period["start_ms"] <= ctx.now_ms < period["end_ms"], ErrorCode.EXPIRED,
            f"period {period_id} does not cover now")
    require(period["entitlement"] == "active" and period["clearance"] != "refunded", ErrorCode.INVALID_STATE,
            f"period {period_id} entitles no streaming ({period['entitlement']}, {period['clearance']})")


def require_open_session(ctx: RuleContext, session_id: str) -> Session:
    session = existing(ctx, session_key(session_id), f"session {session_id}", Session)
    require(session["status"] == "open", ErrorCode.INVALID_STATE, f"session {session_id} is closed")
    require_not_before(ctx, session["updated_at_ms"], f"session {session_id}")
    return session


@command("OpenSession", payload=OpenSessionPayload, roles={"coordinator"})
def open_session(ctx: RuleContext, p: OpenSessionPayload) -> CommandResult:
    require_absent(ctx, session_key(p.session_id), f"session {p.session_id}")
    require_account(ctx, p.account_id, "listener")
    require_entitled(ctx, p.account_id, p.period_id)
    work = existing(ctx, work_key(p.work_id), f"work {p.work_id}", Work)
    require(work["status"] == "active", ErrorCode.INVALID_STATE, f"work {p.work_id} is {work['status']}")
    require(p.rendition_id in work["rendition_ids"], ErrorCode.INVALID_REFERENCE,
            f"rendition {p.rendition_id} is not a rendition of work {p.work_id}")
    day = day_of(ctx.now_ms)
    require(ctx.changes.get(STATE, listener_day_key(p.account_id, day)) is None, ErrorCode.DAY_CLOSED,
            f"day {day} of {p.account_id} is closed")
    ctx.changes.claim_unique(active_session_sentinel(p.account_id), {"session_id": p.session_id},
                             ErrorCode.SESSION_ALREADY_ACTIVE, f"account {p.account_id} already has an open session")
    activity = _activity(ctx, p.account_id, day)
    window: SessionWindow = {"session_id": p.session_id, "opened_at_ms": ctx.now_ms, "closed_at_ms": None}
    joined: ListenerActivity = {**activity, "sessions": [*activity["sessions"], window]}
    ctx.changes.put_state(listener_activity_key(p.account_id, day), joined)
    opened: Session = {
        "session_id": p.session_id,
        "account_id": p.account_id,
        "period_id": p.period_id,
        "work_id": p.work_id,
        "rendition_id": p.rendition_id,
        "rights_version": work["rights_version"],
        "day": day,
        "status": "open",
        "opened_at_ms": ctx.now_ms,
        "lease_ms": p.lease_ms,
        "expires_at_ms": ctx.now_ms + p.lease_ms,
        "updated_at_ms": ctx.now_ms,
        "closed_at_ms": None,
        "close_reason": None,
        "grant_count": 0,
        "receipt_ids": [],
        "receipted_media_ms": 0,
    }
    ctx.changes.put_state(session_key(p.session_id), opened)
    ctx.changes.event("SessionOpened", session_id=p.session_id, account_id=p.account_id, work_id=p.work_id,
                      rendition_id=p.rendition_id, day=day)
    return {"session_id": p.session_id, "day": day, "expires_at_ms": ctx.now_ms + p.lease_ms}


@command("CloseSession", payload=CloseSessionPayload, roles={"coordinator"})
def close_session(ctx: RuleContext, p: CloseSessionPayload) -> CommandResult:
    session = require_open_session(ctx, p.session_id)
    lease_over = ctx.now_ms >= session["expires_at_ms"]
    require(lease_over == (p.reason == "expired"), ErrorCode.EXPIRED if lease_over else ErrorCode.INVALID_TIME,
            f"session {p.session_id} lease {'has' if lease_over else 'has not'} expired")
    ctx.changes.release_unique(active_session_sentinel(session["account_id"]))
    activity = _activity(ctx, session["account_id"], session["day"])
    windows: list[SessionWindow] = [{**window, "closed_at_ms": ctx.now_ms}
                                    if window["session_id"] == p.session_id else window
                                    for window in activity["sessions"]]
    ended: ListenerActivity = {**activity, "sessions": windows}
    ctx.changes.put_state(listener_activity_key(session["account_id"], session["day"]), ended)
    closed: Session = {
        **session,
        "status": "closed",
        "updated_at_ms": ctx.now_ms,
        "closed_at_ms": ctx.now_ms,
        "close_reason": p.reason,
    }
    ctx.changes.put_state(session_key(p.session_id), closed)
    ctx.changes.event("SessionClosed", session_id=p.session_id, account_id=session["account_id"], reason=p.reason,
                      receipts=len(session["receipt_ids"]))
    return {"session_id": p.session_id, "receipts": len(session["receipt_ids"])}


def _activity(ctx: RuleContext, listener_id: str, day: int) -> ListenerActivity:
    record = ctx.changes.get(STATE, listener_activity_key(listener_id, day))
    return record.data_as(ListenerActivity) if record else {"listener_id": listener_id, "day": day, "sessions": []}
