"""Journal selectors: one entry as stored and what it emitted, for the auditor's view of one entry (docs/adr/0058),
and where a span of admission times starts in the journal (docs/adr/0059)."""

from __future__ import annotations

import orjson

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import seq20
from ledger_engine.layout import EVENTS, JOURNAL
from ledger_engine.open_json import Document, JournalEvent
from ledger_engine.selectors.view import LedgerView


def entry(view: LedgerView, sequence: int) -> Document | None:
    """The journal entry at ``sequence`` as the ledger stored it, or None where the journal holds none."""
    raw = view.get(JOURNAL, seq20(sequence).encode())
    if raw is None:
        return None
    found: Document = orjson.loads(raw)
    return found


def entry_events(view: LedgerView, sequence: int) -> list[JournalEvent]:
    """The events journal entry ``sequence`` emitted, in the order it emitted them."""
    return [orjson.loads(raw) for _key, raw in view.scan(EVENTS, (seq20(sequence) + "/").encode())]


def admitted_at_ms(view: LedgerView, sequence: int) -> int:
    found = entry(view, sequence)
    if found is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"journal entry {sequence} does not exist")
    admitted: int = found["envelope"]["admitted_at_ms"]
    return admitted


def first_admitted_from(view: LedgerView, at_ms: int) -> int:
    """The first sequence admitted at or after ``at_ms``, or the head's successor when none is.

    Admission time never runs backwards along the journal (docs/adr/0012), so a binary search finds it
    reading about log2(head) entries, however long the journal is.
    """
    low, high = 1, view.sequence + 1
    while low < high:
        middle = (low + high) // 2
        if admitted_at_ms(view, middle) < at_ms:
            low = middle + 1
        else:
            high = middle
    return low
