"""Journal selectors: what a journal entry emitted, for the auditor's view of one entry (docs/adr/0058)."""

from __future__ import annotations

from typing import Any

import orjson

from ledger_engine.keys import seq20
from ledger_engine.layout import EVENTS
from ledger_engine.projections.view import LedgerView


def entry_events(view: LedgerView, sequence: int) -> list[dict[str, Any]]:
    """The events journal entry ``sequence`` emitted, in the order it emitted them."""
    return [orjson.loads(raw) for _key, raw in view.scan(EVENTS, (seq20(sequence) + "/").encode())]
