"""The journal as an auditor reads it: entries by sequence or command ID, range checks, exports."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date
from typing import Any, Iterator

import orjson

from ledger_engine.application.journal import recompute_entry_hash
from ledger_engine.canonical import ZERO_HASH, canonical_bytes, sha256_hex
from ledger_engine.errors import ErrorCode, StorageFault
from ledger_engine.open_json import Document, JournalEvent, Report, Unvalidated
from ledger_engine.selectors import accounting, journal_queries
from ledger_engine.selectors.accounting import Posting, TouchedRecord
from ledger_engine.selectors.view import LedgerView
from porto_console.console.listing import DAY_MS, day_number

PAGE_ENTRIES = 50
SCAN_LIMIT = 10_000  # entries one journal page may look through for filter matches
MAX_RANGE = 10_000  # entries one verification or export may cover
CSV_COLUMNS = ("sequence", "command_id", "command_type", "actor_id", "admitted_at_ms", "outcome", "code",
               "delta_hash", "previous_entry_hash", "entry_hash")


@dataclass(frozen=True)
class JournalWindow:
    entries: list[Report]
    start: int  # the sequence this window reads from
    first: int  # where the window reads from with no cursor: the span's newest entry, or its oldest
    next_cursor: int | None  # the next window's ``before`` (newest first) or ``after`` (oldest first), if any
    oldest_first: bool = False


@dataclass(frozen=True)
class RangeCheck:
    first: int
    last: int
    checked: int
    problem: str = ""  # empty when every entry recomputes and links to its predecessor

    @property
    def ok(self) -> bool:
        return not self.problem


def summary(entry: Document) -> Report:
    envelope = entry["envelope"]
    return {"sequence": entry["sequence"], "command_id": envelope["command_id"],
            "command_type": envelope["command_type"], "actor_id": envelope["actor_id"],
            "admitted_at_ms": envelope["admitted_at_ms"], "outcome": entry["outcome"],
            "code": entry["result"]["code"], "delta_hash": entry["delta_hash"],
            "previous_entry_hash": entry["previous_entry_hash"], "entry_hash": entry["entry_hash"]}


def window(view: LedgerView, head: int, *, before: int | None = None, after: int | None = None,
           command_type: str = "", outcome: str = "", actor: str = "", first_day: date | None = None,
           last_day: date | None = None, oldest_first: bool = False) -> JournalWindow:
    """Up to a page of matching entries admitted within the days given, newest first from ``before`` (exclusive)
    or the span's newest down, or oldest first from ``after`` (exclusive) or the span's oldest up."""
    low, high = admitted_span(view, head, first_day, last_day)
    if oldest_first:
        first, step = low, 1
        start = max(low, after + 1) if after else low
    else:
        first, step = high, -1
        start = min(high, before - 1) if before else high
    found: list[Report] = []
    sequence = start
    while low <= sequence <= high and len(found) < PAGE_ENTRIES and abs(sequence - start) < SCAN_LIMIT:
        entry = summary(journalled(view, sequence))
        if ((not command_type or entry["command_type"] == command_type) and (not outcome or entry["outcome"] == outcome)
                and (not actor or entry["actor_id"] == actor)):
            found.append(entry)
        sequence += step
    return JournalWindow(found, start, first, sequence - step if low <= sequence <= high else None, oldest_first)


def admitted_span(view: LedgerView, head: int, first_day: date | None, last_day: date | None) -> tuple[int, int]:
    """The sequences admitted on ``first_day`` to ``last_day`` (UTC, both included), found without a scan."""
    low = journal_queries.first_admitted_from(view, day_number(first_day) * DAY_MS) if first_day else 1
    high = journal_queries.first_admitted_from(view, (day_number(last_day) + 1) * DAY_MS) - 1 if last_day else head
    return low, min(high, head)


def journalled(view: LedgerView, sequence: int) -> Document:
    """The entry at ``sequence``, which the caller read from at or below the head: missing, the store lost it."""
    entry = journal_queries.entry(view, sequence)
    if entry is None:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"journal entry {sequence}, at or below the head, is missing")
    return entry


@dataclass(frozen=True)
class EntryReads:
    """One entry as the auditor reads it: what it emitted, the postings it made, the records it wrote, and whether
    its hash still recomputes and links to its predecessor's."""

    entry: Document
    events: list[JournalEvent]
    postings: list[Posting]
    touched: list[TouchedRecord]
    recomputed_ok: bool


def entry_reads(view: LedgerView, sequence: int) -> EntryReads | None:
    """The entry at ``sequence`` with what it did, or None beyond the head."""
    entry = journal_queries.entry(view, sequence)
    if entry is None:
        return None
    return EntryReads(entry, journal_queries.entry_events(view, sequence), accounting.entry_postings(view, sequence),
                      accounting.entry_records(view, sequence), verify_range(view, sequence, sequence).ok)


def record_entries(view: LedgerView, kind: str, record_id: str) -> list[tuple[int, Unvalidated]]:
    """The journal entries that wrote one record, oldest first: each sequence with its envelope."""
    return [(sequence, journalled(view, sequence)["envelope"])
            for sequence in accounting.entries_touching(view, kind, record_id)]


def verify_range(view: LedgerView, first: int, last: int) -> RangeCheck:
    """Recompute each entry hash in ``[first, last]`` and check every link back to ``first - 1``."""
    previous = ZERO_HASH if first == 1 else journalled(view, first - 1)["entry_hash"]
    for sequence in range(first, last + 1):
        entry = journalled(view, sequence)
        if entry["previous_entry_hash"] != previous:
            return RangeCheck(first, last, sequence - first, f"sequence {sequence}: previous entry hash breaks the chain")
        if recompute_entry_hash(entry) != entry["entry_hash"]:
            return RangeCheck(first, last, sequence - first, f"sequence {sequence}: entry hash does not match its contents")
        previous = entry["entry_hash"]
    return RangeCheck(first, last, last - first + 1)


def entries(view: LedgerView, first: int, last: int) -> Iterator[Document]:
    for sequence in range(first, last + 1):
        yield journalled(view, sequence)


def export_bytes(view: LedgerView, first: int, last: int, file_format: str) -> bytes:
    """JSON lines of the full canonical entries, or CSV of their summaries."""
    if file_format == "json":
        return b"".join(canonical_bytes(entry) + b"\n" for entry in entries(view, first, last))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(summary(entry) for entry in entries(view, first, last))
    return text.getvalue().encode()


def export_digest(content: bytes) -> str:
    return sha256_hex(content)


def pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()
