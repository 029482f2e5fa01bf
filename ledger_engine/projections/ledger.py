"""Projections over the ledger's own records: actors by role, effects by status, events by type."""

from __future__ import annotations

from typing import Iterable

from ledger_engine.keys import key, seq20
from ledger_engine.layout import OUTBOX, STATE
from ledger_engine.open_json import JournalEvent, RecordData
from ledger_engine.projections import ANY_KIND, IndexEntry, IndexReader


class LedgerProjection:
    record_kinds = frozenset({(STATE, "actor"), (OUTBOX, ANY_KIND)})
    event_types = None

    def record_entries(self, family: str, record_key: str, data: RecordData) -> Iterable[IndexEntry]:
        if family == STATE and record_key.startswith("actor/"):
            actor_id = record_key.split("/", 1)[1]
            for role in data["roles"]:
                yield key("actor_by_role", role, actor_id), {"status": data["status"]}
        elif family == OUTBOX:
            yield key("effect_by_status", data["status"], data["kind"], data["effect_id"]), {}

    def event_entries(self, sequence: int, index: int, event: JournalEvent, read: IndexReader) -> Iterable[IndexEntry]:
        yield key("event_by_type", event["type"], seq20(sequence), seq20(index)), {}
