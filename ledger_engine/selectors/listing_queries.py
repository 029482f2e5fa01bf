"""Whole lists for screens that search, range and sort every match before cutting a page (docs/adr/0059).

Each read walks an index the projections already keep, a page at a time, so no scan holds more than one
chunk; the caller filters, sorts and counts what it yields.
"""

from __future__ import annotations

from typing import Iterator

from ledger_engine.open_json import IndexValue
from ledger_engine.selectors.budget_queries import listener_day_stake
from ledger_engine.selectors.streaming_queries import open_holds
from ledger_engine.selectors.view import LedgerView

CHUNK = 500


def every_open_hold(view: LedgerView, *, reason: str | None = None) -> Iterator[IndexValue]:
    """Every open hold, oldest first, with the money its listener-day waits to allocate (``at_stake``, minor
    units, None without a budget); all of them or those carrying ``reason``."""
    stakes: dict[tuple[str, int], int | None] = {}  # a listener-day's holds (one a node) share its stake
    start = None
    while True:
        page = open_holds(view, reason=reason, start=start, limit=CHUNK)
        for hold in page.items:
            listener_day = (hold["listener_id"], hold["day"])
            if listener_day not in stakes:
                stakes[listener_day] = listener_day_stake(view, *listener_day)
            yield {**hold, "at_stake": stakes[listener_day]}
        if page.next_start is None:
            return
        start = page.next_start
