"""Money reads for the console: balances, budget equation terms, payables, the payout block.

Each read names the ledger sequence it read at. A balance is the closest
cached point at or before that sequence plus the postings after it
(projections/money.py); ``folded_balance`` ignores the points and folds every
posting, the audit recompute. No read here backs a money check: the rules and
the conservation checker read records.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from ledger_engine.amounts import checked_sum, format_amount, format_total, parse_amount, parse_total
from ledger_engine.open_json import IndexValue, Report
from ledger_engine.storage.value_codec import decode_record
from ledger_engine.domain.chart import budget_unallocated
from ledger_engine.domain.commands.money.allocation import AllocationPlan, plan_listener_day
from ledger_engine.domain.invariants import Mismatch, budget_terms, equation_mismatches, ledger_mismatches
from ledger_engine.domain.schema.money_allocation import Budget, budget_key
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import INDEXES, STATE
from ledger_engine.projections.money import cursor_key, payable_prefix, point_key, posting_key, posting_prefix
from ledger_engine.selectors.view import LedgerView


@dataclass(frozen=True)
class Balance:
    account: str
    asset: str
    sequence: int
    debits: int
    credits: int
    postings: int

    @property
    def net_credit(self) -> int:
        """Credits less debits: what a payable, reserve or funding account holds (treasury shows it negated)."""
        return self.credits - self.debits

    def as_json(self) -> Report:
        return {"account": self.account, "asset": self.asset, "sequence": self.sequence,
                "debits": format_total(self.debits), "credits": format_total(self.credits),
                "net_credit": str(self.net_credit), "postings": self.postings}


def balance(view: LedgerView, account: str, asset: str, *, at_sequence: int | None = None) -> Balance:
    """The closest cached point at or before the read sequence, plus the postings after it."""
    sequence = _read_sequence(view, at_sequence)
    return _fold(view, account, asset, sequence, _closest_point(view, account, asset, sequence))


def folded_balance(view: LedgerView, account: str, asset: str, *, at_sequence: int | None = None) -> Balance:
    """Every posting from the first, ignoring cached points."""
    return _fold(view, account, asset, _read_sequence(view, at_sequence), None)


def budget_equation(view: LedgerView, budget_id: str) -> Report:
    """A budget's conservation terms, whether they balance, and its unallocated account as posted."""
    raw = view.get(STATE, budget_key(budget_id).encode())
    if raw is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"budget {budget_id} does not exist")
    budget = decode_record(raw).data_as(Budget)
    posted = balance(view, budget_unallocated(budget_id), budget["asset"])
    return {
        "budget_id": budget_id,
        "sequence": posted.sequence,
        "terms": {term: format_amount(amount) for term, amount in budget_terms(budget).items()},
        "mismatches": [m.as_json() for m in equation_mismatches(budget_key(budget_id), budget)],
        "unallocated_posted": str(posted.net_credit),
    }


def payables(view: LedgerView, recipient_id: str) -> Report:
    """A recipient's payable allocation lines and their total."""
    sequence = view.sequence
    lines = [{"line_id": raw_key.decode().rsplit("/", 1)[1], **orjson.loads(raw)}
             for raw_key, raw in view.scan(INDEXES, payable_prefix(recipient_id).encode())]
    total = checked_sum(parse_amount(line["amount"]) for line in lines)
    return {"recipient_id": recipient_id, "sequence": sequence, "lines": lines, "total": format_amount(total)}


def conservation_report(view: LedgerView) -> list[Mismatch]:
    """The full conservation check over ``view`` (of a checkpoint, or at a command boundary)."""
    return ledger_mismatches(view.as_rules_read())


def allocation_plan(view: LedgerView, listener_id: str, day: int, budget_id: str) -> AllocationPlan:
    """What AllocateListenerDay would do now: how many line IDs to supply, and the revisions to expect."""
    return plan_listener_day(view.as_rules_read(), listener_id, day, budget_id)


def _read_sequence(view: LedgerView, at_sequence: int | None) -> int:
    return view.sequence if at_sequence is None else at_sequence


def _index(view: LedgerView, index_key: str) -> IndexValue | None:
    raw = view.get(INDEXES, index_key.encode())
    return orjson.loads(raw) if raw is not None else None


def _closest_point(view: LedgerView, account: str, asset: str, sequence: int) -> IndexValue | None:
    """Binary search over the account's numbered points for the last one at or before ``sequence``."""
    cursor = _index(view, cursor_key(asset, account))
    low, high, closest = 1, cursor["points"] if cursor else 0, None
    while low <= high:
        middle = (low + high) // 2
        point = _index(view, point_key(asset, account, middle))
        assert point is not None, "the projection writes every point up to its cursor's count"
        if point["sequence"] <= sequence:
            closest, low = point, middle + 1
        else:
            high = middle - 1
    return closest


def _fold(view: LedgerView, account: str, asset: str, sequence: int, point: IndexValue | None) -> Balance:
    totals = {"debit": 0, "credit": 0}
    postings, start = 0, None
    if point is not None:
        totals = {"debit": parse_total(point["debits"]), "credit": parse_total(point["credits"])}
        postings = point["postings"]
        start = posting_key(asset, account, (point["sequence"], point["event"], point["line"])).encode()
    for raw_key, raw in view.scan(INDEXES, posting_prefix(asset, account).encode(), start):
        if raw_key == start:
            continue
        if int(raw_key.rsplit(b"/", 3)[1]) > sequence:
            break
        posting = orjson.loads(raw)
        totals[posting["side"]] += parse_amount(posting["amount"])
        postings += 1
    return Balance(account, asset, sequence, totals["debit"], totals["credit"], postings)
