"""Streaming selectors for the review screens: holds, a session's evidence, a node's history, listener-days.

Each takes a ``LedgerView`` (selectors/view.py), as the other selectors do, and returns the schema's typed
records (domain/schema/streaming.py); the index entries the review projections keep are returned as they are
stored. Each list is a ``Page``: its items and the ``start`` of the next page, or ``None`` at the end. Scans read
the live database; callers show the head sequence they read at (docs/adr/0002).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TypedDict

import orjson

from ledger_engine.domain.schema.streaming import (
    Hold, ListenedWork, ListenerDay, Node, NodeHealth, Receipt, Session, hold_key, listener_day_key,
    node_health_key, node_key, receipt_key, session_key,
)
from ledger_engine.domain.view import Shape
from ledger_engine.keys import key, seq20
from ledger_engine.layout import INDEXES, STATE
from ledger_engine.open_json import IndexValue, Unvalidated
from ledger_engine.selectors.budget_queries import listener_day_stake
from ledger_engine.selectors.view import LedgerView

# One session's evidence: a grant, a receipt and up to two decisions per chunk, and its holds.
MAX_SESSION_ENTRIES = 20_000


@dataclass(frozen=True)
class Page:
    items: list[IndexValue]
    next_start: str | None


class SessionEvidence(TypedDict):
    """A session and the review entries of its grants, receipts, decisions and holds, with its serving nodes."""

    session: Session
    grants: list[IndexValue]
    receipts: list[IndexValue]
    decisions: list[IndexValue]
    holds: list[IndexValue]
    nodes: dict[str, Node | None]


class HoldDetail(TypedDict):
    hold: Hold
    revision: int
    at_stake: int | None  # what its listener-day waits to allocate, minor units (budget_queries.listener_day_stake)
    receipt: Receipt | None
    evidence: SessionEvidence | None


class NodeHistory(TypedDict):
    node: Node
    health: NodeHealth | None
    history: Page


def open_holds(view: LedgerView, *, reason: str | None = None, start: str | None = None, limit: int = 50) -> Page:
    """Open holds, oldest first; all of them or those carrying ``reason``."""
    prefix = key("hold_open_by_reason", reason) + "/" if reason else "hold_open/"
    return _page(view, prefix, start, limit, lambda index_key, value: {"hold_id": _last(index_key), **value})


def open_hold_counts(view: LedgerView) -> dict[str, int]:
    """Open holds per reason."""
    rows = view.entries("hold_open_count/", limit=1_000)
    return {parts[-1]: value["open"] for parts, value in rows if value["open"]}


def session_evidence(view: LedgerView, session_id: str) -> SessionEvidence | None:
    """A session with its grants, receipts, decisions, holds and the nodes that served it."""
    session = _data(view, session_key(session_id), Session)
    if session is None:
        return None
    evidence: dict[str, list[IndexValue]] = {"grant": [], "receipt": [], "decision": [], "hold": []}
    prefix = key("session_evidence", session_id) + "/"
    for (kind, item_id, *revision), value in view.entries(prefix, limit=MAX_SESSION_ENTRIES):
        entry = {"id": item_id, **value}
        if revision:
            entry["revision"] = int(revision[0])
        evidence[kind].append(entry)
    node_ids = sorted({grant["node_id"] for grant in evidence["grant"]})
    return {
        "session": session,
        "grants": evidence["grant"],
        "receipts": evidence["receipt"],
        "decisions": evidence["decision"],
        "holds": evidence["hold"],
        "nodes": {node_id: _data(view, node_key(node_id), Node) for node_id in node_ids},
    }


def hold_detail(view: LedgerView, hold_id: str) -> HoldDetail | None:
    """The hold with its revision, the money its listener-day waits to allocate, its receipt, and everything
    recorded about its session."""
    record = view.record(hold_key(hold_id))
    if record is None:
        return None
    hold = record.data_as(Hold)
    return {"hold": hold, "revision": record.revision,
            "at_stake": listener_day_stake(view, hold["listener_id"], hold["day"]),
            "receipt": _data(view, receipt_key(hold["receipt_id"]), Receipt),
            "evidence": session_evidence(view, hold["session_id"])}


def hold_revision(view: LedgerView, hold_id: str) -> int | None:
    record = view.record(hold_key(hold_id))
    return record.revision if record else None


def expected_hold_revision(hold_id: str, revision: int) -> Unvalidated:
    """What a decision on ``hold_id`` expects of it: the revision its reviewer saw."""
    return {"cf": STATE, "key": hold_key(hold_id), "revision": revision}


def current_decision(view: LedgerView, receipt_id: str) -> IndexValue | None:
    """The receipt's latest decision as the projection keeps it: revision, disposition, reasons, sequence."""
    return view.entry(key("decision_current", receipt_id))


def node_history(view: LedgerView, node_id: str, *, start: str | None = None, limit: int = 100) -> NodeHistory | None:
    """A node with its key versions, latest health and event history (admission, status, keys, health)."""
    node = _data(view, node_key(node_id), Node)
    if node is None:
        return None
    history = _page(view, key("node_history", node_id) + "/", start, limit, lambda _, event: event)
    return {"node": node, "health": _data(view, node_health_key(node_id), NodeHealth), "history": history}


def listener_day(view: LedgerView, listener_id: str, day: int) -> ListenerDay | None:
    """The closed record of a listener-day, or ``None`` while it is open."""
    return _data(view, listener_day_key(listener_id, day), ListenerDay)


def eligible_duration_per_work(view: LedgerView, listener_id: str, day: int) -> list[ListenedWork]:
    """Eligible listened milliseconds per work and rights version of a closed listener-day."""
    prefix = key("listener_day_work", listener_id, seq20(day)) + "/"
    return [{"work_id": work_id, "rights_version": int(version), "listened_ms": value["listened_ms"]}
            for (work_id, version), value in view.entries(prefix, limit=MAX_SESSION_ENTRIES)]


def _page(view: LedgerView, prefix: str, start: str | None, limit: int,
          item: Callable[[str, IndexValue], IndexValue]) -> Page:
    """Up to ``limit`` index entries under ``prefix`` from the key ``start`` on, and the key that follows them."""
    rows: list[tuple[str, IndexValue]] = []
    for raw_key, raw in view.scan(INDEXES, prefix.encode(), start.encode() if start else None):
        if len(rows) > limit:
            break
        rows.append((raw_key.decode(), orjson.loads(raw)))
    following = rows[limit][0] if len(rows) > limit else None
    return Page([item(index_key, value) for index_key, value in rows[:limit]], following)


def _data(view: LedgerView, record_key: str, shape: type[Shape]) -> Shape | None:
    record = view.record(record_key)
    return record.data_as(shape) if record else None


def _last(index_key: str) -> str:
    return index_key.rsplit("/", 1)[1]
