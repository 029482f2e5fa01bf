"""Money projections: posting entries and cached balance points, payables, budgets, the payout block.

Balances follow the cached balance projection of docs/spec/balance-projection.md, over a journal
ordered by sequence. Every posting line is an index entry at its position
``(sequence, event index, line number)``:

    posting/<asset>/<account>/<seq20>/<event20>/<line20>      {"side", "amount", "journal"}

After every ``POINT_INTERVAL`` postings to an account the projection appends a
cached point holding the totals up to and including that posting's position:

    balance_point/<asset>/<account>/<seq20(ordinal)>         {"debits", "credits", "postings", "sequence", "event", "line"}

Points are append-only and numbered, so a reader finds the closest one at or
before its read sequence by binary search, then folds the postings after it
(money_queries.py). ``balance_cursor/<asset>/<account>`` is the running fold
the projection needs to write the next point. A read with no point folds from
the first posting, and the result is the same. Nothing here backs a money
check: the rules read records, never indexes.
"""

from __future__ import annotations

from typing import Iterable

from ledger_engine.amounts import format_amount, format_total, parse_amount, parse_total
from ledger_engine.domain.invariants import CONSERVATION_KEY, budget_terms, equation_mismatches
from ledger_engine.domain.postings import POSTED
from ledger_engine.domain.schema.money_allocation import (
    BUDGET_PREFIX, CORRECTION_PREFIX, LINE_PREFIX, Budget, JournalEntry,
)
from ledger_engine.domain.view import shaped
from ledger_engine.keys import key, seq20
from ledger_engine.layout import STATE
from ledger_engine.open_json import IndexValue, JournalEvent, RecordData
from ledger_engine.projections import IndexEntry, IndexReader

POINT_INTERVAL = 128
EMPTY_CURSOR: IndexValue = {"debits": "0", "credits": "0", "postings": 0, "points": 0}
Position = tuple[int, int, int]


def posting_prefix(asset: str, account: str) -> str:
    return key("posting", asset, account) + "/"


def posting_key(asset: str, account: str, position: Position) -> str:
    return key("posting", asset, account, *(seq20(part) for part in position))


def point_key(asset: str, account: str, ordinal: int) -> str:
    return key("balance_point", asset, account, seq20(ordinal))


def cursor_key(asset: str, account: str) -> str:
    return key("balance_cursor", asset, account)


def payable_prefix(recipient_id: str) -> str:
    return key("payable_line", recipient_id) + "/"


def correction_request_prefix(status: str) -> str:
    return key("correction_request_by_status", status) + "/"


REQUEST_PREFIX = "correction_request/"


class MoneyProjection:
    record_kinds = frozenset((STATE, prefix.rstrip("/")) for prefix in (
        LINE_PREFIX, BUDGET_PREFIX, REQUEST_PREFIX, CORRECTION_PREFIX, CONSERVATION_KEY))
    event_types = frozenset({POSTED})

    def record_entries(self, family: str, record_key: str, data: RecordData) -> Iterable[IndexEntry]:
        if family != STATE:
            return ()
        if record_key.startswith(LINE_PREFIX):
            return _line_entries(data)
        if record_key.startswith(BUDGET_PREFIX):
            return _budget_entries(record_key, shaped(data, Budget))
        if record_key.startswith(REQUEST_PREFIX):
            return [(key("correction_request_by_status", data["status"], data["correction_id"]), {
                "budget_id": data["budget_id"], "reason": data["reason"], "requested_by": data["requested_by"],
                "requested_at_ms": data["requested_at_ms"], **data["amounts"]})]
        if record_key.startswith(CORRECTION_PREFIX):
            return [(key("correction_by_budget", data["budget_id"], data["correction_id"]),
                     {"reason": data["reason"], "released": data["released"], "refunded": data["refunded"]})]
        if record_key == CONSERVATION_KEY:
            return [(key("conservation_status"), {name: data[name] for name in (
                "status", "check_id", "checked_at_sequence", "mismatch_count")})]
        return ()

    def event_entries(self, sequence: int, index: int, event: JournalEvent, read: IndexReader) -> Iterable[IndexEntry]:
        if event["type"] != POSTED:
            return ()
        asset = event["asset"]
        entries: list[IndexEntry] = []
        cursors: dict[str, IndexValue] = {}
        for line_no, line in enumerate(event["lines"]):
            account = line["account"]
            cursor = cursors.get(account) or read(cursor_key(asset, account)) or EMPTY_CURSOR
            cursor = _advance(cursor, line)
            position = (sequence, index, line_no)
            entries.append((posting_key(asset, account, position),
                            {"side": line["side"], "amount": line["amount"], "journal": event["journal"]}))
            if cursor["postings"] % POINT_INTERVAL == 0:
                cursor["points"] += 1
                entries.append((point_key(asset, account, cursor["points"]), {
                    "debits": cursor["debits"], "credits": cursor["credits"], "postings": cursor["postings"],
                    "sequence": sequence, "event": index, "line": line_no}))
            cursors[account] = cursor
        entries += [(cursor_key(asset, account), cursor) for account, cursor in sorted(cursors.items())]
        return entries


def _advance(cursor: IndexValue, line: JournalEntry) -> IndexValue:
    side = "debits" if line["side"] == "debit" else "credits"
    return {**cursor, side: format_total(parse_total(cursor[side]) + parse_amount(line["amount"])),
            "postings": cursor["postings"] + 1}


def _line_entries(line: RecordData) -> list[IndexEntry]:
    if line["recipient_id"] is None:
        return []
    summary = {"amount": line["amount"], "role": line["role"], "budget_id": line["budget_id"], "day": line["day"]}
    if "artifact" in line:  # a day line: no budget, the frozen chunk it totals instead
        summary["artifact"] = line["artifact"]
    entries = [(key("recipient_line", line["recipient_id"], seq20(line["day"]), line["line_id"]),
                {**summary, "status": line["status"]})]
    if line["status"] == "payable" and not line.get("pending_correction"):
        entries.append((key("payable_line", line["recipient_id"], line["line_id"]), summary))
    return entries


def _budget_entries(record_key: str, budget: Budget) -> list[IndexEntry]:
    amounts = budget_terms(budget)
    mismatches = equation_mismatches(record_key, budget, amounts)
    terms = {term: format_amount(amount) for term, amount in amounts.items()}
    entries: list[IndexEntry] = [
        (key("budget_summary", budget["budget_id"]),
         {"period_id": budget["period_id"], "listener_id": budget["listener_id"], **terms, "balanced": not mismatches}),
        (key("budget_by_period", budget["period_id"]), {"budget_id": budget["budget_id"]})]
    if mismatches:
        entries.append((key("budget_unbalanced", budget["budget_id"]), {"mismatches": [m.as_json() for m in mismatches]}))
    return entries
