"""Streaming evidence projections for the review screens.

From records (each a pure function of one record):

- ``hold_open/<raised20>/<hold>`` and ``hold_open_by_reason/<reason>/<raised20>/<hold>``: the open-hold queue,
  oldest first, whole or per reason;
- ``session_evidence/<session>/{grant,receipt,hold}/<id>`` and ``.../decision/<receipt>/<revision20>``:
  everything recorded about one session;
- ``session_by_listener/<listener>/<day20>/<session>``, ``period_by_account/<account>/<start20>/<period>``;
- ``node_by_status/<status>/<node>``, ``node_by_operator/<operator>/<node>``;
- ``listener_day_work/<listener>/<day20>/<work>/<rights20>`` and ``day_closed/<day20>/<listener>``: closed days.

From events, in sequence order:

- ``node_history/<node>/<seq20>/<index20>``: admission, status, key and health events of a node;
- ``decision_current/<receipt>``: the latest decision revision of each receipt;
- ``hold_open_count/<reason>``: how many open holds carry each reason.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ledger_engine.domain.schema.streaming import Decision, Grant, Hold, ListenerDay, Node, Period, Receipt, Session
from ledger_engine.keys import key, seq20
from ledger_engine.layout import STATE
from ledger_engine.open_json import JournalEvent, RecordData
from ledger_engine.projections import IndexEntry, IndexReader, picked

NODE_EVENTS = ("NodeAdmitted", "NodeStatusChanged", "NodeKeyRotated", "NodeHealthRecorded")


def _hold(hold: Hold) -> Iterable[IndexEntry]:
    yield key("session_evidence", hold["session_id"], "hold", hold["hold_id"]), {
        "status": hold["status"], "reasons": hold["reasons"]}
    if hold["status"] != "open":
        return
    summary = picked(hold, ("receipt_id", "session_id", "listener_id", "day", "node_id", "reasons", "raised_at_ms"))
    raised = seq20(hold["raised_at_ms"])
    yield key("hold_open", raised, hold["hold_id"]), summary
    for reason in hold["reasons"]:
        yield key("hold_open_by_reason", reason, raised, hold["hold_id"]), summary


def _grant(grant: Grant) -> Iterable[IndexEntry]:
    if grant["session_id"] is not None:
        yield key("session_evidence", grant["session_id"], "grant", grant["grant_id"]), picked(
            grant, ("node_id", "chunk_index", "state", "issued_at_ms", "expires_at_ms", "receipt_id"))


def _receipt(receipt: Receipt) -> Iterable[IndexEntry]:
    yield key("session_evidence", receipt["session_id"], "receipt", receipt["receipt_id"]), picked(
        receipt, ("node_id", "key_version", "chunk_index", "bytes_served", "served_at_ms", "media_ms", "partial",
                  "hold_id", "evidence_digest"))


def _decision(decision: Decision) -> Iterable[IndexEntry]:
    yield key("session_evidence", decision["session_id"], "decision", decision["receipt_id"],
              seq20(decision["revision"])), picked(
        decision, ("disposition", "hold_reasons", "decision", "decision_reason", "actor_id", "decided_at_ms",
                   "predecessor"))


def _session(session: Session) -> Iterable[IndexEntry]:
    yield key("session_by_listener", session["account_id"], seq20(session["day"]), session["session_id"]), {
        "status": session["status"], "work_id": session["work_id"], "opened_at_ms": session["opened_at_ms"]}


def _period(period: Period) -> Iterable[IndexEntry]:
    yield key("period_by_account", period["account_id"], seq20(period["start_ms"]), period["period_id"]), {
        "end_ms": period["end_ms"], "entitlement": period["entitlement"], "clearance": period["clearance"]}


def _node(node: Node) -> Iterable[IndexEntry]:
    yield key("node_by_status", node["status"], node["node_id"]), {"operator_id": node["operator_id"],
                                                                    "endpoint": node["endpoint"]}
    yield key("node_by_operator", node["operator_id"], node["node_id"]), {"status": node["status"]}


def _listener_day(day: ListenerDay) -> Iterable[IndexEntry]:
    for work in day["works"]:
        yield key("listener_day_work", day["listener_id"], seq20(day["day"]), work["work_id"],
                  seq20(work["rights_version"])), {"listened_ms": work["listened_ms"]}
    yield key("day_closed", seq20(day["day"]), day["listener_id"]), {
        "period_id": day["period_id"], "eligible_ms": day["eligible_ms"], "closed_at_ms": day["closed_at_ms"]}


# By a state key's first component: each takes the record type that kind of key stores.
_RECORD_ENTRIES: dict[str, Callable[[Any], Iterable[IndexEntry]]] = {
    "hold": _hold,
    "grant": _grant,
    "receipt": _receipt,
    "decision": _decision,
    "session": _session,
    "period": _period,
    "node": _node,
    "listener_day": _listener_day,
}


class StreamingProjection:
    record_kinds = frozenset((STATE, kind) for kind in _RECORD_ENTRIES)
    event_types = frozenset({*NODE_EVENTS, "ReceiptDecided", "HoldRaised", "HoldDecided"})

    def record_entries(self, family: str, record_key: str, data: RecordData) -> Iterable[IndexEntry]:
        if family != STATE:
            return ()
        entries = _RECORD_ENTRIES.get(record_key.split("/", 1)[0])
        return entries(data) if entries else ()

    def event_entries(self, sequence: int, index: int, event: JournalEvent,
                      read: IndexReader) -> Iterable[IndexEntry]:
        kind = event["type"]
        if kind in NODE_EVENTS:
            yield key("node_history", event["node_id"], seq20(sequence), seq20(index)), event
        elif kind == "ReceiptDecided":
            yield key("decision_current", event["receipt_id"]), {
                "revision": event["revision"], "disposition": event["disposition"],
                "hold_reasons": event["hold_reasons"], "sequence": sequence}
        elif kind in ("HoldRaised", "HoldDecided"):
            change = 1 if kind == "HoldRaised" else -1
            reasons = event["reasons"] if kind == "HoldRaised" else event["hold_reasons"]
            for reason in reasons:
                count_key = key("hold_open_count", reason)
                yield count_key, {"open": (read(count_key) or {"open": 0})["open"] + change}
