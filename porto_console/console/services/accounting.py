"""Accounting screens' pieces: amounts in words and minor units, CSV files, dates as ledger milliseconds.

Every read goes through ``ledger_engine.selectors.accounting``; nothing here parses a key.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime, time, timedelta
from typing import Iterable

from ledger_engine.domain.ruleset import ASSETS
from ledger_engine.selectors.accounting import Posting, Statement, TrialBalance

DAY = timedelta(days=1)


def formatted(minor_units: int, asset: str) -> str:
    """Signed integer minor units as a decimal in the asset's unit, by integer arithmetic only."""
    places = ASSETS[asset]
    whole, fraction = divmod(abs(minor_units), 10**places)
    return f"{'-' if minor_units < 0 else ''}{whole:,}.{fraction:0{places}d} {asset}"


def day_start_ms(day: date) -> int:
    return int(datetime.combine(day, time(), UTC).timestamp() * 1000)


def range_ms(first: date, last: date) -> tuple[int, int]:
    """A date range, both days included, as ``[from_ms, to_ms)``."""
    return day_start_ms(first), day_start_ms(last + DAY)


def _money(minor_units: int, asset: str) -> list[str]:
    return [str(minor_units), formatted(minor_units, asset)]


def _csv(header: Iterable[str], rows: Iterable[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def postings_csv(postings: list[Posting]) -> str:
    return _csv(("sequence", "journal", "asset", "account", "debit_minor", "debit", "credit_minor", "credit"),
                ([str(p.sequence), p.journal, p.asset, p.account, *_money(p.debit, p.asset), *_money(p.credit, p.asset)]
                 for p in postings))


def statement_csv(statement: Statement) -> str:
    asset = statement.asset
    opening = [["", "", "opening balance", "", "", "", "", *_money(statement.opening, asset)]]
    rows = ([str(row.posting.sequence), str(row.admitted_at_ms), row.posting.account, row.posting.journal,
             *_money(row.posting.debit, asset), *_money(row.posting.credit, asset), *_money(row.balance, asset)]
            for row in statement.rows)
    return _csv(("sequence", "admitted_at_ms", "account", "journal", "debit_minor", "debit", "credit_minor", "credit",
                 "balance_minor", "balance"), [*opening, *rows])


def trial_balance_csv(trial: TrialBalance) -> str:
    rows = [[row.asset, row.account, *_money(row.debits, row.asset), *_money(row.credits, row.asset),
             *_money(row.net_credit, row.asset)] for row in trial.rows]
    totals = [[asset, "total", *_money(debits, asset), *_money(credits, asset), *_money(credits - debits, asset)]
              for asset, (debits, credits) in sorted(trial.totals.items())]
    return _csv(("asset", "account", "debits_minor", "debits", "credits_minor", "credits", "net_credit_minor",
                 "net_credit"), [*rows, *totals])
