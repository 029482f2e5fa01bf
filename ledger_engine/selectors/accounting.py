"""Accounting reads: an entry's postings, the records it touched, account statements and the trial balance.

Typed selectors over the ``events``, ``deltas`` and posting index families, so
a screen never parses a key. Amounts are integer minor units; a balance is
net credit (credits less debits), negative for a debit balance such as the
treasury's. None of these reads backs a money check: the rules read records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import orjson

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.chart import artist_payable, operator_payable, reserved_payouts
from ledger_engine.domain.postings import POSTED
from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.keys import seq20
from ledger_engine.layout import DELTAS, EVENTS, INDEXES, JOURNAL, STATE
from ledger_engine.projections.money import posting_prefix
from ledger_engine.selectors.money_queries import balance
from ledger_engine.selectors.view import LedgerView

# The records a journal entry links to, by the prefix of their state key.
RECORD_KINDS = {"payment_run": "run", "payment": "payment", "hold": "hold", "correction_request": "correction",
                "correction": "correction", "staff_change": "staff_change", "recipient_update": "recipient_update",
                "recipient": "recipient", "budget": "budget"}
RECORD_ID_PARTS = {"recipient_update": 2}  # a recipient update is named by its recipient and its own ID
BACK_LINK_SCAN = 50_000  # journal entries one "entries that touched this record" read looks through
CURSOR_PREFIX = b"balance_cursor/"


@dataclass(frozen=True)
class Posting:
    sequence: int
    event: int
    line: int
    journal: str
    asset: str
    account: str
    side: str  # "debit" or "credit"
    amount: int

    @property
    def debit(self) -> int:
        return self.amount if self.side == "debit" else 0

    @property
    def credit(self) -> int:
        return self.amount if self.side == "credit" else 0


@dataclass(frozen=True)
class TouchedRecord:
    kind: str  # "run", "payment", "hold", "correction", "staff_change", "recipient_update", "recipient" or "budget"
    record_id: str  # a recipient update's is ``<recipient>/<update>``


@dataclass(frozen=True)
class StatementRow:
    posting: Posting
    admitted_at_ms: int
    balance: int  # net credit after this posting


@dataclass(frozen=True)
class Statement:
    accounts: tuple[str, ...]
    asset: str
    from_ms: int
    to_ms: int
    opening: int
    rows: list[StatementRow]

    @property
    def closing(self) -> int:
        return self.rows[-1].balance if self.rows else self.opening


@dataclass(frozen=True)
class TrialBalanceRow:
    asset: str
    account: str
    debits: int
    credits: int

    @property
    def net_credit(self) -> int:
        return self.credits - self.debits


@dataclass(frozen=True)
class TrialBalance:
    sequence: int
    rows: list[TrialBalanceRow]
    totals: dict[str, tuple[int, int]] = field(default_factory=dict)  # asset -> (debits, credits)


def entry_postings(view: LedgerView, sequence: int) -> list[Posting]:
    """Every posting line of the journal entry at ``sequence``, in event and line order."""
    postings = []
    prefix = (seq20(sequence) + "/").encode()
    for event_index, (_, raw) in enumerate(view.scan(EVENTS, prefix)):
        event = orjson.loads(raw)
        if event["type"] != POSTED:
            continue
        for line_no, line in enumerate(event["lines"]):
            postings.append(Posting(sequence, event_index, line_no, event["journal"], event["asset"],
                                    line["account"], line["side"], parse_amount(line["amount"])))
    return postings


def entry_records(view: LedgerView, sequence: int) -> list[TouchedRecord]:
    """The runs, payments, holds, corrections, staff changes, recipient updates, recipients and budgets whose state
    records the entry at ``sequence`` wrote."""
    raw = view.get(DELTAS, seq20(sequence).encode())
    touched = []
    for row in orjson.loads(raw) if raw else ():
        if row["column_family"] != STATE:
            continue
        prefix, _, record_id = row["key"].partition("/")
        if prefix in RECORD_KINDS and record_id and record_id.count("/") == RECORD_ID_PARTS.get(prefix, 1) - 1:
            touched.append(TouchedRecord(RECORD_KINDS[prefix], record_id))
    return list(dict.fromkeys(touched))  # a correction's request and its result are one record here


def entries_touching(view: LedgerView, kind: str, record_id: str) -> list[int]:
    """The sequences of the journal entries that wrote the record, oldest first (within the newest scan window)."""
    prefixes = [prefix for prefix, named in RECORD_KINDS.items() if named == kind]
    if not prefixes:
        raise LedgerError(ErrorCode.NOT_FOUND, f"no record kind {kind!r}")
    needles = [b'"column_family":"state","key":' + orjson.dumps(f"{prefix}/{record_id}") + b"," for prefix in prefixes]
    head = view.sequence
    first = max(1, head - BACK_LINK_SCAN + 1)
    return [int(raw_key) for raw_key, raw in view.scan(DELTAS, b"", seq20(first).encode())
            if any(needle in raw for needle in needles)]


def posting_accounts(view: LedgerView) -> list[tuple[str, str]]:
    """Every ``(asset, account)`` that has been posted to, sorted."""
    found = []
    for raw_key, _ in view.scan(INDEXES, CURSOR_PREFIX):
        asset, _, account = raw_key[len(CURSOR_PREFIX):].decode().partition("/")
        found.append((asset, account))
    return found


def recipient_accounts(recipient_id: str) -> tuple[str, ...]:
    """The accounts that hold what is owed to a recipient: payable by role, then reserved for a run."""
    return artist_payable(recipient_id), operator_payable(recipient_id), reserved_payouts(recipient_id)


def account_statement(view: LedgerView, accounts: tuple[str, ...], asset: str, *, from_ms: int,
                      to_ms: int) -> Statement:
    """Postings to ``accounts`` admitted in ``[from_ms, to_ms)``, each with the running net credit of them all."""
    admitted = _admission_times(view)
    opening, rows = 0, list[StatementRow]()
    for posting in _merged_postings(view, accounts, asset):
        at_ms = admitted(posting.sequence)
        if at_ms >= to_ms:
            break
        movement = posting.credit - posting.debit
        if at_ms < from_ms:
            opening += movement
            continue
        rows.append(StatementRow(posting, at_ms, (rows[-1].balance if rows else opening) + movement))
    return Statement(accounts, asset, from_ms, to_ms, opening, rows)


def trial_balance(view: LedgerView, *, at_sequence: int | None = None) -> TrialBalance:
    """Every account's debits and credits up to ``at_sequence`` (the head by default); each asset must balance."""
    sequence = view.sequence if at_sequence is None else at_sequence
    rows: list[TrialBalanceRow] = []
    for asset, account in posting_accounts(view):
        folded = balance(view, account, asset, at_sequence=sequence)
        if folded.postings:
            rows.append(TrialBalanceRow(asset, account, folded.debits, folded.credits))
    return tally(sequence, rows)


def tally(sequence: int, rows: list[TrialBalanceRow]) -> TrialBalance:
    """The rows with each asset's totals; refused unless every asset balances."""
    totals: dict[str, tuple[int, int]] = {}
    for row in rows:
        debits, credits = totals.get(row.asset, (0, 0))
        totals[row.asset] = (debits + row.debits, credits + row.credits)
    unbalanced = [asset for asset, (debits, credits) in totals.items() if debits != credits]
    if unbalanced:
        raise LedgerError(ErrorCode.INVARIANT_VIOLATION,
                          f"trial balance at sequence {sequence} does not balance in {', '.join(unbalanced)}")
    return TrialBalance(sequence, rows, totals)


def _merged_postings(view: LedgerView, accounts: tuple[str, ...], asset: str) -> Iterator[Posting]:
    """The accounts' postings in journal order (sequence, event, line)."""
    merged = [posting for account in accounts for posting in _account_postings(view, account, asset)]
    return iter(sorted(merged, key=lambda posting: (posting.sequence, posting.event, posting.line)))


def _account_postings(view: LedgerView, account: str, asset: str) -> Iterator[Posting]:
    for raw_key, raw in view.scan(INDEXES, posting_prefix(asset, account).encode()):
        sequence, event, line = (int(part) for part in raw_key.rsplit(b"/", 3)[1:])
        posting = orjson.loads(raw)
        yield Posting(sequence, event, line, posting["journal"], asset, account, posting["side"],
                      parse_amount(posting["amount"]))


def _admission_times(view: LedgerView) -> Callable[[int], int]:
    cache: dict[int, int] = {}

    def admitted(sequence: int) -> int:
        if sequence not in cache:
            entry_key = seq20(sequence)
            raw = view.get(JOURNAL, entry_key.encode())
            if raw is None:
                raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{JOURNAL}/{entry_key}, a posting's entry, is missing")
            cache[sequence] = orjson.loads(raw)["envelope"]["admitted_at_ms"]
        return cache[sequence]
    return admitted
