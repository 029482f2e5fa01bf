"""One journal entry by its sequence, as the ledger stored it: what the auditor's journal screens list, show,
verify and export."""

from __future__ import annotations

import orjson

from ledger_engine.keys import seq20
from ledger_engine.layout import JOURNAL
from ledger_engine.open_json import Document
from ledger_engine.selectors.view import LedgerView


def entry(view: LedgerView, sequence: int) -> Document | None:
    """The journal entry at ``sequence``, or None where the journal holds none."""
    raw = view.get(JOURNAL, seq20(sequence).encode())
    if raw is None:
        return None
    found: Document = orjson.loads(raw)
    return found
