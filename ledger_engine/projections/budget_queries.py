"""Budget selectors: each budget's conservation terms, what each recipient is owed, and the budgets there are.

Each takes a ``LedgerView`` (projections/view.py) and reads the money
projections (projections/money.py); none backs a money check, and no caller
takes their keys apart (docs/adr/0058).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.schema.money_allocation import BUDGET_PREFIX
from ledger_engine.keys import key
from ledger_engine.projections.view import LedgerView

BUDGET_SUMMARY_PREFIX = key("budget_summary") + "/"
RECIPIENT_LINE_PREFIX = key("recipient_line") + "/"
OWED_STATUSES = ("payable", "reserved", "paid")


def budget_summaries(view: LedgerView) -> list[dict[str, Any]]:
    """Each budget's ``budget_id``, period, listener, conservation terms and whether they balance; by budget ID."""
    return [{"budget_id": budget_id, **summary} for (budget_id,), summary in view.entries(BUDGET_SUMMARY_PREFIX)]


def recipient_totals(view: LedgerView) -> dict[str, dict[str, int]]:
    """Per recipient, the amounts of its allocation lines payable, reserved in approved runs and paid."""
    totals: dict[str, Counter] = defaultdict(Counter)
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
