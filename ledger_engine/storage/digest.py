"""The logical state digest: sorted rows of the logical families, streamed through JCS."""

from __future__ import annotations

from typing import Iterator

from ledger_engine.storage.rows import rows_hash
from ledger_engine.canonical import STATE_DOMAIN
from ledger_engine.layout import DIGEST_FAMILIES
from ledger_engine.storage.rocks import RocksStore


def logical_rows(store: RocksStore) -> Iterator[tuple[str, str, bytes]]:
    """Rows ordered by family name bytes, then key bytes. Use on a quiescent or read-only store."""
    for family in sorted(DIGEST_FAMILIES):
        for key, value in store.scan(family):
            yield family, key.decode(), value


def logical_state_hash(store: RocksStore) -> str:
    return rows_hash(STATE_DOMAIN, logical_rows(store))[0]
