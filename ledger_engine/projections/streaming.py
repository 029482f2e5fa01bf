"""Streaming evidence projections for the review screens."""

from __future__ import annotations

from typing import Any, Iterable

from ledger_engine.projections import IndexEntry, IndexReader


class StreamingProjection:
    def record_entries(self, family: str, record_key: str, data: dict[str, Any]) -> Iterable[IndexEntry]:
        return ()

    def event_entries(self, sequence: int, index: int, event: dict[str, Any], read: IndexReader) -> Iterable[IndexEntry]:
        return ()
