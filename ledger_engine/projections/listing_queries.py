"""Whole lists for screens that search, range and sort every match before cutting a page (docs/adr/0059).

Each read walks an index the projections already keep, a page at a time, so no scan holds more than one
chunk; the caller filters, sorts and counts what it yields.
"""

from __future__ import annotations

from typing import Any, Iterator

from ledger_engine.projections.streaming_queries import open_holds
from ledger_engine.projections.view import LedgerView

CHUNK = 500


def every_open_hold(view: LedgerView, *, reason: str | None = None) -> Iterator[dict[str, Any]]:
    """Every open hold, oldest first; all of them or those carrying ``reason``."""
    start = None
    while True:
        page = open_holds(view, reason=reason, start=start, limit=CHUNK)
        yield from page.items
        if page.next_start is None:
            return
        start = page.next_start
