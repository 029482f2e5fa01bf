"""Double-entry postings. Every posted journal balances in its single asset."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ledger_engine.amounts import U64_MAX, format_amount, parse_amount
from ledger_engine.domain.changes import Changes
from ledger_engine.domain.ruleset import ASSETS
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import JournalEvent

POSTED = "Posted"


@dataclass(frozen=True, slots=True)
class Line:
    account: str
    side: Literal["debit", "credit"]
    amount: int


def debit(account: str, amount: int) -> Line:
    return Line(account, "debit", amount)


def credit(account: str, amount: int) -> Line:
    return Line(account, "credit", amount)


def post(changes: Changes, *, journal: str, asset: str, lines: list[Line]) -> None:
    """Record one balanced journal in one asset; zero lines are dropped."""
    lines = [line for line in lines if line.amount]
    event = {
        "journal": journal,
        "asset": asset,
        "lines": [{"account": l.account, "side": l.side, "amount": format_amount(l.amount)} for l in lines],
    }
    assert_balanced(event)
    if lines:
        changes.event(POSTED, **event)


def assert_balanced(event: JournalEvent) -> None:
    """Invariant: debits equal credits, in a known asset, within u64."""
    if event["asset"] not in ASSETS:
        raise LedgerError(ErrorCode.INVARIANT_VIOLATION, f"unknown asset {event['asset']!r}")
    totals = {"debit": 0, "credit": 0}
    for line in event["lines"]:
        amount = parse_amount(line["amount"])
        if amount == 0:
            raise LedgerError(ErrorCode.INVARIANT_VIOLATION, "zero posting line")
        totals[line["side"]] += amount
    if totals["debit"] != totals["credit"] or totals["debit"] > U64_MAX:
        raise LedgerError(
            ErrorCode.INVARIANT_VIOLATION,
            f"journal {event['journal']} does not balance: {totals['debit']} != {totals['credit']}",
        )
