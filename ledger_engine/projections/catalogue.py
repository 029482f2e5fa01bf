"""Catalogue projections: works by status."""

from __future__ import annotations

from typing import Iterable

from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import JournalEvent, RecordData
from ledger_engine.projections import IndexEntry, IndexReader


class CatalogueProjection:
    record_kinds = frozenset({(STATE, "work")})
    event_types: frozenset[str] = frozenset()

    def record_entries(self, family: str, record_key: str, data: RecordData) -> Iterable[IndexEntry]:
        if family == STATE and record_key.startswith("work/"):
            yield key("work_by_status", data["status"], data["work_id"]), {"rights_version": data["rights_version"]}

    def event_entries(self, sequence: int, index: int, event: JournalEvent, read: IndexReader) -> Iterable[IndexEntry]:
        return ()
