"""Rebuilding the indexes column family from the logical state and events alone."""

from __future__ import annotations

import hashlib

from ledger_engine.open_json import Report
from ledger_engine.storage.digest import logical_rows
from ledger_engine.layout import EVENTS, INDEXES
from ledger_engine.projections.maintenance import IndexMaintainer
from ledger_engine.storage.rocks import RocksStore


def rebuild_indexes(store: RocksStore) -> Report:
    """Replace every index entry with freshly derived ones, in one atomic batch."""
    entries = IndexMaintainer().rebuild(
        logical_rows(store), ((key.decode(), value) for key, value in store.scan(EVENTS))
    )
    stale = [(INDEXES, key, None) for key, _ in store.scan(INDEXES) if key not in entries]
    store.write([*stale, *((INDEXES, key, value) for key, value in sorted(entries.items()))])
    return indexes_digest(store)


def indexes_digest(store: RocksStore) -> Report:
    """A hash over every index key and value, to compare two index families byte for byte."""
    digest = hashlib.sha256()
    count = 0
    for key, value in store.scan(INDEXES):
        digest.update(len(key).to_bytes(4, "big") + key + len(value).to_bytes(4, "big") + value)
        count += 1
    return {"entries": count, "sha256": digest.hexdigest()}
