"""Index maintenance: incremental (inside a commit) and full rebuild (from logical state)."""

from __future__ import annotations

from typing import Any, Callable, Iterable

import orjson

from ledger_engine.canonical import canonical_bytes
from ledger_engine.layout import DIGEST_FAMILIES, EVENTS, INDEXES, REVISIONED_FAMILIES
from ledger_engine.projections import IndexEntry, IndexReader, Projection, all_projections

RawGet = Callable[[str, bytes], bytes | None]


class IndexMaintainer:
    def __init__(self, projections: list[Projection] | None = None) -> None:
        self.projections = projections if projections is not None else all_projections()

    def _record_entries(self, family: str, key: str, raw: bytes | None) -> dict[bytes, bytes]:
        if raw is None or family not in REVISIONED_FAMILIES:
            return {}
        data = orjson.loads(raw)["data"]
        return _encode(e for p in self.projections for e in p.record_entries(family, key, data))

    def _event_entries(self, key: str, raw: bytes, read: IndexReader) -> dict[bytes, bytes]:
        sequence, index = (int(part) for part in key.split("/"))
        event = orjson.loads(raw)
        return _encode(e for p in self.projections for e in p.event_entries(sequence, index, event, read))

    def ops_for(self, rows: list[tuple[str, str, bytes | None]], get_raw: RawGet) -> list[tuple[bytes, bytes | None]]:
        """Index changes for a command's delta rows; call before the rows are applied."""
        changes: dict[bytes, bytes | None] = {}

        def read(index_key: str) -> dict[str, Any] | None:
            encoded = index_key.encode()
            raw = changes[encoded] if encoded in changes else get_raw(INDEXES, encoded)
            return orjson.loads(raw) if raw is not None else None

        for family, key, new_raw in rows:
            if family == EVENTS:
                changes.update(self._event_entries(key, new_raw, read))
                continue
            old = self._record_entries(family, key, get_raw(family, key.encode()))
            new = self._record_entries(family, key, new_raw)
            for index_key in old.keys() - new.keys():
                changes[index_key] = None
            for index_key, value in new.items():
                if old.get(index_key) != value:
                    changes[index_key] = value
        return list(changes.items())

    def rebuild(self, logical_rows: Iterable[tuple[str, str, bytes]], events: Iterable[tuple[str, bytes]]) -> dict[bytes, bytes]:
        """Every index entry, derived from the logical records and then the events in order."""
        entries: dict[bytes, bytes] = {}
        for family, key, raw in logical_rows:
            if family in DIGEST_FAMILIES:
                entries.update(self._record_entries(family, key, raw))

        def read(index_key: str) -> dict[str, Any] | None:
            raw = entries.get(index_key.encode())
            return orjson.loads(raw) if raw is not None else None

        for key, raw in events:
            entries.update(self._event_entries(key, raw, read))
        return entries


def _encode(entries: Iterable[IndexEntry]) -> dict[bytes, bytes]:
    return {key.encode(): canonical_bytes(value) for key, value in entries}
