"""CloseDay: freeze one listener-day's eligible evidence, once.

The closer names the listener, the UTC day, its period and the revision of the
day's activity record it reviewed. Every session of the day must be closed and
every hold on its receipts decided. Eligibility is evaluated per closed
session: a session with at least ``MIN_ELIGIBLE_LISTEN_MS`` of counted
listening is eligible, and only eligible sessions add listened time per work.
Counted receipts (accepted, partial, or released from a hold) add their bytes
to the serving node. Peer fills are never read. The closed record is written
once and never changes: evidence arriving later is held as ``late``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ledger_engine.domain.changes import require
from ledger_engine.domain.commands.streaming.checks import (
    existing, require_account, require_stated_revision,
)
from ledger_engine.domain.schema.streaming import (
    Hold, ListenedWork, ListenerActivity, ListenerDay, Node, Period, Receipt, ServedBytes, Session, SessionSummary,
    hold_key, listener_activity_key, listener_day_key, node_key, period_key, receipt_key, session_key,
)
from ledger_engine.domain.commands.streaming.policy import MIN_ELIGIBLE_LISTEN_MS, day_start_ms
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Count, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult


class CloseDayPayload(Payload):
    listener_id: Identifier
    day: Count
    period_id: Identifier


@dataclass(frozen=True)
class _CountedSession:
    session: Session
    listened_ms: int
    node_bytes: dict[str, int]

    @property
    def eligible(self) -> bool:
        return self.listened_ms >= MIN_ELIGIBLE_LISTEN_MS

    def summary(self) -> SessionSummary:
        return {"session_id": self.session["session_id"], "work_id": self.session["work_id"],
                "listened_ms": self.listened_ms, "eligible": self.eligible}


@command("CloseDay", payload=CloseDayPayload, roles={"coordinator", "ops"})
def close_day(ctx: RuleContext, p: CloseDayPayload) -> CommandResult:
    activity_key = listener_activity_key(p.listener_id, p.day)
    require_stated_revision(ctx, activity_key, "closing a listener-day")
    require(ctx.changes.get(STATE, listener_day_key(p.listener_id, p.day)) is None, ErrorCode.DAY_CLOSED,
            f"day {p.day} of {p.listener_id} is already closed")
    require(day_start_ms(p.day + 1) <= ctx.now_ms, ErrorCode.INVALID_TIME, f"day {p.day} has not ended")
    require_account(ctx, p.listener_id, "listener", active=False)
    period = existing(ctx, period_key(p.period_id), f"period {p.period_id}", Period)
    require(period["account_id"] == p.listener_id and period["start_ms"] <= day_start_ms(p.day) < period["end_ms"],
            ErrorCode.INVALID_REFERENCE, f"period {p.period_id} does not cover day {p.day} of {p.listener_id}")

    activity = ctx.changes.get(STATE, activity_key)
    activity_data = activity.data_as(ListenerActivity) if activity else None
    windows = activity_data["sessions"] if activity_data else []
    counted = [_count(ctx, _closed_session(ctx, window["session_id"], p.period_id)) for window in windows]
    works = _listening_per_work(counted)
    closed: ListenerDay = {
        "listener_id": p.listener_id,
        "day": p.day,
        "period_id": p.period_id,
        "status": "closed",
        "works": works,
        "nodes": _bytes_per_node(ctx, counted),
        "sessions": [session.summary() for session in counted],
        "eligible_ms": sum(work["listened_ms"] for work in works),
        "closed_at_ms": ctx.now_ms,
        "activity_revision": activity.revision if activity else None,
        "hold_free": True,
    }
    ctx.changes.put_state(listener_day_key(p.listener_id, p.day), closed)
    ctx.changes.event("DayClosed", listener_id=p.listener_id, day=p.day, period_id=p.period_id,
                      eligible_ms=closed["eligible_ms"], sessions=len(counted))
    return {"listener_id": p.listener_id, "day": p.day, "eligible_ms": closed["eligible_ms"],
            "eligible_sessions": sum(1 for session in counted if session.eligible)}


def _closed_session(ctx: RuleContext, session_id: str, period_id: str) -> Session:
    session = existing(ctx, session_key(session_id), f"session {session_id}", Session)
    require(session["status"] == "closed", ErrorCode.INVALID_STATE, f"session {session_id} is still open")
    require(session["period_id"] == period_id, ErrorCode.INVALID_REFERENCE,
            f"session {session_id} streamed under period {session['period_id']}")
    return session


def _count(ctx: RuleContext, session: Session) -> _CountedSession:
    """A session's counted listening and bytes per node, refusing while a hold is undecided."""
    listened_ms = 0
    node_bytes: dict[str, int] = defaultdict(int)
    for receipt_id in session["receipt_ids"]:
        receipt = existing(ctx, receipt_key(receipt_id), f"receipt {receipt_id}", Receipt)
        if receipt["hold_id"] is not None:
            hold = existing(ctx, hold_key(receipt["hold_id"]), f"hold {receipt['hold_id']}", Hold)
            require(hold["status"] != "open", ErrorCode.HOLDS_OPEN,
                    f"hold {receipt['hold_id']} on day {session['day']} of {session['account_id']} is undecided")
            if hold["status"] == "rejected":
                continue
        listened_ms += receipt["media_ms"]
        node_bytes[receipt["node_id"]] += receipt["bytes_served"]
    return _CountedSession(session, listened_ms, node_bytes)


def _listening_per_work(counted: list[_CountedSession]) -> list[ListenedWork]:
    """Eligible sessions' listening per work and rights version, sorted by work, then version."""
    works: dict[tuple[str, int], int] = defaultdict(int)
    for session in counted:
        if session.eligible:
            works[(session.session["work_id"], session.session["rights_version"])] += session.listened_ms
    return [{"work_id": work_id, "rights_version": version, "listened_ms": listened}
            for (work_id, version), listened in sorted(works.items())]


def _bytes_per_node(ctx: RuleContext, counted: list[_CountedSession]) -> list[ServedBytes]:
    """Counted bytes per serving node with its operator, sorted by node."""
    served: dict[str, int] = defaultdict(int)
    for session in counted:
        for node_id, size in session.node_bytes.items():
            served[node_id] += size
    return [{"node_id": node_id, "operator_id": _node(ctx, node_id)["operator_id"], "served_bytes": size}
            for node_id, size in sorted(served.items())]


def _node(ctx: RuleContext, node_id: str) -> Node:
    return existing(ctx, node_key(node_id), f"node {node_id}", Node)
