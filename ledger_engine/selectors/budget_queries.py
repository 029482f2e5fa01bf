"""Budget selectors: each budget's conservation terms, what each recipient is owed, and the budgets there are.

Each takes a ``LedgerView`` (selectors/view.py) and reads the money
projections (projections/money.py); none backs a money check, and no caller
takes their keys apart (docs/adr/0058).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.commands.money.budgets import day_index, slice_for_day
from ledger_engine.domain.schema.money_allocation import BUDGET_PREFIX, Budget, budget_key
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.keys import key
from ledger_engine.open_json import IndexValue
from ledger_engine.selectors.view import LedgerView

BUDGET_SUMMARY_PREFIX = key("budget_summary") + "/"
RECIPIENT_LINE_PREFIX = key("recipient_line") + "/"
OWED_STATUSES = ("payable", "reserved", "paid")


def budget_summaries(view: LedgerView) -> list[IndexValue]:
    """Each budget's ``budget_id``, period, listener, conservation terms and whether they balance; by budget ID."""
    return [{"budget_id": budget_id, **summary} for (budget_id,), summary in view.entries(BUDGET_SUMMARY_PREFIX)]


def recipient_totals(view: LedgerView) -> dict[str, dict[str, int]]:
    """Per recipient, the amounts of its allocation lines payable, reserved in approved runs and paid."""
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    for (recipient_id, _day, _line_id), line in view.entries(RECIPIENT_LINE_PREFIX):
        if line["status"] in OWED_STATUSES:
            totals[recipient_id][line["status"]] += parse_amount(line["amount"])
    return {recipient_id: {status: totals[recipient_id][status] for status in OWED_STATUSES}
            for recipient_id in sorted(totals)}


def budget_first_days(view: LedgerView) -> dict[str, int]:
    """Each budget's first UTC day of its period, by budget ID."""
    return {record.data["budget_id"]: record.data["first_day"] for _key, record in view.records(BUDGET_PREFIX)}


def budget_ids(view: LedgerView) -> list[str]:
    return sorted(record.data["budget_id"] for _key, record in view.records(BUDGET_PREFIX))


def listener_day_stake(view: LedgerView, listener_id: str, day: int) -> int | None:
    """What a listener-day allocates once nothing holds it, closed or not: its day's slice of the budget funding
    the listener's period that covers the day, in minor units. None when no funded period covers it."""
    period_id = _period_covering(view, listener_id, day)
    funding = view.entry(key("budget_by_period", period_id)) if period_id else None
    record = view.record(budget_key(funding["budget_id"])) if funding else None
    budget = record.data_as(Budget) if record is not None else None
    if budget is None or not 1 <= day_index(budget, day) <= budget["days"]:
        return None
    return slice_for_day(budget, day)


def _period_covering(view: LedgerView, account_id: str, day: int) -> str | None:
    """The account's period that covers ``day`` (an account's periods never overlap)."""
    day_ms = day * DAY_MS
    for (start_ms, period_id), period in view.entries(key("period_by_account", account_id) + "/"):
        if int(start_ms) <= day_ms < period["end_ms"]:
            return period_id
    return None
