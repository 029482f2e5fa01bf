"""Reads for the streaming review screens, over any reader with the owner's ``get`` and ``scan``.

Each list is a ``Page``: its items and the ``start`` of the next page, or
``None`` at the end. Scans read the live database; callers show the head
sequence they read at (docs/adr/0002).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from ledger_engine.domain.schema.streaming import (
    hold_key, listener_day_key, node_health_key, node_key, receipt_key, session_key,
)
from ledger_engine.domain.view import Record
from ledger_engine.keys import key, seq20
from ledger_engine.layout import INDEXES, STATE

# One session's evidence: a grant, a receipt and up to two decisions per chunk, and its holds.
MAX_SESSION_ENTRIES = 20_000


class Reader(Protocol):
    def get(self, family: str, key: str) -> Record | None: ...

    def scan(self, family: str, prefix: str = "", *, start: str | None = None,
             limit: int = 100) -> list[tuple[str, dict[str, Any]]]: ...


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_start: str | None


def open_holds(reader: Reader, *, reason: str | None = None, start: str | None = None, limit: int = 50) -> Page:
    """Open holds, oldest first; all of them or those carrying ``reason``."""
    prefix = key("hold_open_by_reason", reason) + "/" if reason else "hold_open/"
    return _page(reader, prefix, start, limit, lambda index_key, value: {"hold_id": _last(index_key), **value})


def open_hold_counts(reader: Reader) -> dict[str, int]:
    """Open holds per reason."""
    rows = reader.scan(INDEXES, "hold_open_count/", limit=1_000)
    return {_last(index_key): value["open"] for index_key, value in rows if value["open"]}


def session_evidence(reader: Reader, session_id: str) -> dict[str, Any] | None:
    """A session with its grants, receipts, decisions, holds and the nodes that served it."""
    session = _data(reader, session_key(session_id))
    if session is None:
        return None
    evidence: dict[str, list] = {"grant": [], "receipt": [], "decision": [], "hold": []}
    prefix = key("session_evidence", session_id) + "/"
    for index_key, value in reader.scan(INDEXES, prefix, limit=MAX_SESSION_ENTRIES):
        kind, item_id, *revision = index_key[len(prefix):].split("/")
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
        "nodes": {node_id: _data(reader, node_key(node_id)) for node_id in node_ids},
    }


def hold_detail(reader: Reader, hold_id: str) -> dict[str, Any] | None:
    """The hold with its revision, its receipt, and everything recorded about its session."""
    record = reader.get(STATE, hold_key(hold_id))
    if record is None:
        return None
    hold = record.data
    return {"hold": hold, "revision": record.revision, "receipt": _data(reader, receipt_key(hold["receipt_id"])),
            "evidence": session_evidence(reader, hold["session_id"])}


def hold_revision(reader: Reader, hold_id: str) -> int | None:
    record = reader.get(STATE, hold_key(hold_id))
    return record.revision if record else None


def expected_hold_revision(hold_id: str, revision: int) -> dict[str, Any]:
    """What a decision on ``hold_id`` expects of it: the revision its reviewer saw."""
    return {"cf": STATE, "key": hold_key(hold_id), "revision": revision}


def current_decision(reader: Reader, receipt_id: str) -> dict[str, Any] | None:
    rows = reader.scan(INDEXES, key("decision_current", receipt_id), limit=1)
    return rows[0][1] if rows and rows[0][0] == key("decision_current", receipt_id) else None


def node_history(reader: Reader, node_id: str, *, start: str | None = None, limit: int = 100) -> dict[str, Any] | None:
    """A node with its key versions, latest health and event history (admission, status, keys, health)."""
    node = _data(reader, node_key(node_id))
    if node is None:
        return None
    history = _page(reader, key("node_history", node_id) + "/", start, limit, lambda _, event: event)
    return {"node": node, "health": _data(reader, node_health_key(node_id)), "history": history}


def listener_day(reader: Reader, listener_id: str, day: int) -> dict[str, Any] | None:
    """The closed record of a listener-day, or ``None`` while it is open."""
    return _data(reader, listener_day_key(listener_id, day))


def eligible_duration_per_work(reader: Reader, listener_id: str, day: int) -> list[dict[str, Any]]:
    """Eligible listened milliseconds per work and rights version of a closed listener-day."""
    prefix = key("listener_day_work", listener_id, seq20(day)) + "/"
    rows = reader.scan(INDEXES, prefix, limit=MAX_SESSION_ENTRIES)
    return [{"work_id": work_id, "rights_version": int(version), **value}
            for index_key, value in rows for work_id, version in [index_key[len(prefix):].split("/")]]


def _page(reader: Reader, prefix: str, start: str | None, limit: int, item) -> Page:
    rows = reader.scan(INDEXES, prefix, start=start, limit=limit + 1)
    following = rows[limit][0] if len(rows) > limit else None
    return Page([item(index_key, value) for index_key, value in rows[:limit]], following)


def _data(reader: Reader, record_key: str) -> dict[str, Any] | None:
    record = reader.get(STATE, record_key)
    return record.data if record else None


def _last(index_key: str) -> str:
    return index_key.rsplit("/", 1)[1]
