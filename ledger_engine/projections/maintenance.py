"""Index maintenance: incremental (inside a commit) and full rebuild (from logical state).

The incremental path asks only the projections that declare a record's kind
(its family and first key component) or an event's type, and takes the new
values as the engine built them instead of decoding the rows it just encoded.
The rebuild asks every projection about everything, so a rebuild equal to the
maintained indexes also proves the declarations complete (docs/adr/0054).
"""

from __future__ import annotations

from typing import Callable, Iterable

import orjson

from ledger_engine.canonical import engine_bytes
from ledger_engine.layout import DIGEST_FAMILIES, EVENTS, INDEXES, REVISIONED_FAMILIES
from ledger_engine.open_json import IndexValue, JournalEvent, RecordData
from ledger_engine.projections import ANY_KIND, IndexEntry, IndexReader, Projection, all_projections

RawGet = Callable[[str, bytes], bytes | None]
# The engine's own decoded values of rows it just built: (family, key) -> record data or event.
Built = dict[tuple[str, str], RecordData | JournalEvent]
Entries = dict[bytes, bytes]


class IndexMaintainer:
    def __init__(self, projections: list[Projection] | None = None) -> None:
        self.projections = projections if projections is not None else all_projections()
        self._by_kind: dict[tuple[str, str], tuple[Projection, ...]] = {}
        self._by_event: dict[str, tuple[Projection, ...]] = {}

    def _record_projections(self, family: str, key: str) -> tuple[Projection, ...]:
        kind = (family, key.split("/", 1)[0])
        found = self._by_kind.get(kind)
        if found is None:
            found = self._by_kind[kind] = tuple(
                p for p in self.projections
                if kind in p.record_kinds or (family, ANY_KIND) in p.record_kinds)
        return found

    def _event_projections(self, event_type: str) -> tuple[Projection, ...]:
        found = self._by_event.get(event_type)
        if found is None:
            found = self._by_event[event_type] = tuple(
                p for p in self.projections if p.event_types is None or event_type in p.event_types)
        return found

    def _record_entries(self, projections: Iterable[Projection], family: str, key: str,
                        data: RecordData) -> Entries:
        return _encode(e for p in projections for e in p.record_entries(family, key, data))

    def _event_entries(self, projections: Iterable[Projection], key: str, event: JournalEvent,
                       read: IndexReader) -> Entries:
        first, second = key.split("/")
        sequence, index = int(first), int(second)
        return _encode(e for p in projections for e in p.event_entries(sequence, index, event, read))

    def ops_for(self, rows: list[tuple[str, str, bytes | None]], get_raw: RawGet, built: Built | None = None,
                current: dict[tuple[str, str], Entries] | None = None) -> list[tuple[bytes, bytes | None]]:
        """Index changes for a command's delta rows; call before the rows are applied.

        ``built`` holds the decoded values of rows the engine just encoded, so
        they are not decoded again. ``current`` remembers the entries of each
        record this method has seen written, so a later write of the same
        record in the same batch diffs against them without decoding the old
        value; pass one dict per batch (it is updated here).
        """
        built = built if built is not None else {}
        current = current if current is not None else {}
        changes: dict[bytes, bytes | None] = {}
        seen: dict[tuple[str, str], Entries] = {}  # into ``current`` only once every row is done

        def read(index_key: str) -> IndexValue | None:
            encoded = index_key.encode()
            raw = changes[encoded] if encoded in changes else get_raw(INDEXES, encoded)
            return orjson.loads(raw) if raw is not None else None

        for family, key, new_raw in rows:
            if family == EVENTS:
                event = built.get((family, key))
                if event is None:
                    assert new_raw is not None, "an event is written once and never deleted"
                    event = orjson.loads(new_raw)
                projections = self._event_projections(event["type"])
                if projections:
                    changes.update(self._event_entries(projections, key, event, read))
                continue
            projections = self._record_projections(family, key) if family in REVISIONED_FAMILIES else ()
            if not projections:
                continue
            old = current.get((family, key))
            if old is None:
                old_raw = get_raw(family, key.encode())
                old = {} if old_raw is None else self._record_entries(projections, family, key,
                                                                      orjson.loads(old_raw)["data"])
            if new_raw is None:
                new: Entries = {}
            else:
                data = built.get((family, key))
                data = data if data is not None else orjson.loads(new_raw)["data"]
                new = self._record_entries(projections, family, key, data)
            seen[(family, key)] = new
            for index_key in old.keys() - new.keys():
                changes[index_key] = None
            for index_key, value in new.items():
                if old.get(index_key) != value:
                    changes[index_key] = value
        current.update(seen)
        return list(changes.items())

    def rebuild(self, logical_rows: Iterable[tuple[str, str, bytes]], events: Iterable[tuple[str, bytes]]) -> dict[bytes, bytes]:
        """Every index entry, derived from the logical records and then the events in order, by every projection."""
        entries: dict[bytes, bytes] = {}
        for family, key, raw in logical_rows:
            if family in DIGEST_FAMILIES and family in REVISIONED_FAMILIES and raw is not None:
                entries.update(self._record_entries(self.projections, family, key, orjson.loads(raw)["data"]))

        def read(index_key: str) -> IndexValue | None:
            raw = entries.get(index_key.encode())
            return orjson.loads(raw) if raw is not None else None

        for key, raw in events:
            entries.update(self._event_entries(self.projections, key, orjson.loads(raw), read))
        return entries


def _encode(entries: Iterable[IndexEntry]) -> Entries:
    """Index values are built by projections from stored, already validated values: no canonical walk."""
    return {key.encode(): engine_bytes(value) for key, value in entries}
