"""Reading ledger column families row by row, without loading a whole prefix at once."""

from __future__ import annotations

from typing import Any, Iterator

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.layout import STATE

CHUNK = 500


def rows(ledger: LedgerOwner, family: str, prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every ``(key, value)`` under ``prefix`` in key order."""
    start = None
    while True:
        chunk = ledger.scan(family, prefix, start=start, limit=CHUNK)
        yield from chunk
        if len(chunk) < CHUNK:
            return
        start = chunk[-1][0] + "\x00"


def records(ledger: LedgerOwner, prefix: str) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """State records under ``prefix`` as ``(key, revision, data)``."""
    for key, value in rows(ledger, STATE, prefix):
        yield key, value["revision"], value["data"]


def count(ledger: LedgerOwner, family: str, prefix: str) -> int:
    return sum(1 for _ in rows(ledger, family, prefix))
