"""The dashboard's money: what was paid in a period, day by day and against the period before it, and what the
runs and holds waiting for a decision hold back. Integer minor units of the payout asset throughout.

A payment counts as paid on the UTC day the ledger recorded the chain's confirmation of the attempt that paid it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Callable

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.ruleset import ASSETS
from ledger_engine.selectors import listing_queries, payout_queries
from ledger_engine.selectors.payout_queries import RunListing
from ledger_engine.selectors.view import LedgerView
from porto_console.console.charts import Chart, Series, day_label
from porto_console.console.services.dashboard import now_ms  # the dashboard's one clock, which the view dates periods by
from porto_console.console.services.payouts import ASSET

DAY = timedelta(days=1)
EPOCH = date(1970, 1, 1)
PAID = "confirmed"  # the payment state of money the chain confirmed


@dataclass(frozen=True)
class Period:
    key: str
    title: str
    first: date
    last: date  # both days included
    before_first: date
    before_last: date
    before_title: str  # the period it is set against, in words

    @property
    def days(self) -> list[date]:
        return [self.first + DAY * offset for offset in range((self.last - self.first).days + 1)]


def last_14_days(today: date) -> Period:
    return Period("last-14-days", "Last 14 days", today - 13 * DAY, today, today - 27 * DAY, today - 14 * DAY,
                  "the 14 days before")


def this_week(today: date) -> Period:
    monday = today - DAY * today.weekday()
    return Period("this-week", "This week", monday, today, monday - 7 * DAY, today - 7 * DAY,
                  "the same days of last week")


def this_month(today: date) -> Period:
    first = today.replace(day=1)
    before_first = (first - DAY).replace(day=1)
    before_last = min(before_first + (today - first), first - DAY)  # a shorter month ends on its own last day
    return Period("this-month", "This month", first, today, before_first, before_last, "the same days of last month")


def last_month(today: date) -> Period:
    last = today.replace(day=1) - DAY
    before_last = last.replace(day=1) - DAY
    return Period("last-month", "Last month", last.replace(day=1), last, before_last.replace(day=1), before_last,
                  "the month before")


PRESETS: dict[str, Callable[[date], Period]] = {"last-14-days": last_14_days, "this-week": this_week,
                                                "this-month": this_month, "last-month": last_month}
DEFAULT_PRESET = "last-14-days"


def period(preset: str | None, today: date) -> Period:
    """The preset's period ending ``today``, or before it; the last 14 days for a preset there is not."""
    return PRESETS.get(preset or "", PRESETS[DEFAULT_PRESET])(today)


def presets(today: date) -> list[Period]:
    return [make(today) for make in PRESETS.values()]


@dataclass(frozen=True)
class PaidTrend:
    period: Period
    per_day: list[tuple[date, int]]  # each day of the period and what was paid on it
    before: int  # paid in the period before
    last_paid_ms: int | None  # the newest confirmation, in or out of the period

    @property
    def total(self) -> int:
        return sum(amount for _day, amount in self.per_day)

    @property
    def change(self) -> int:
        return self.total - self.before

    @property
    def change_size(self) -> int:
        return abs(self.change)


def paid_trend(view: LedgerView, chosen: Period) -> PaidTrend:
    paid, last_paid_ms = paid_per_day(view)
    before = sum(amount for day, amount in paid.items() if chosen.before_first <= day <= chosen.before_last)
    return PaidTrend(chosen, [(day, paid[day]) for day in chosen.days], before, last_paid_ms)


def paid_per_day(view: LedgerView) -> tuple[Counter, int | None]:
    """What the chain confirmed paid, by UTC day, in the payout asset; and when the newest payment was confirmed."""
    paid: Counter = Counter()
    rows = payout_queries.payment_search_rows(view, (PAID,), lambda _listing: True)
    confirmed = [row for row in rows if row["asset"] == ASSET and row["paid_at_ms"] is not None]
    for row in confirmed:
        paid[utc_day(row["paid_at_ms"])] += parse_amount(row["amount"])
    return paid, max((row["paid_at_ms"] for row in confirmed), default=None)


def paid_chart(trend: PaidTrend) -> Chart:
    return Chart("chart-paid", f"Paid per day, {trend.period.title.lower()} ({ASSET})", "bar", "Day",
                 [day_label((day - EPOCH).days) for day, _amount in trend.per_day],
                 [Series("Paid", [amount for _day, amount in trend.per_day])], unit=ASSET, places=ASSETS[ASSET])


@dataclass(frozen=True)
class MoneyWaiting:
    runs_to_approve: int  # in prepared runs that can still be approved
    runs_to_cancel: int  # in prepared runs another run took lines from
    holds_at_stake: int  # what the open holds' listener-days wait to allocate, each listener-day once
    holds_unfunded: int  # open holds on a listener-day no budget funds


def money_waiting(view: LedgerView) -> MoneyWaiting:
    approvable, stale = payout_queries.prepared_runs_by_approvability(view)
    stakes: dict[tuple[str, int], int] = {}
    unfunded = 0
    for hold in listing_queries.every_open_hold(view):
        if hold["at_stake"] is None:
            unfunded += 1
        else:
            stakes[(hold["listener_id"], hold["day"])] = hold["at_stake"]
    return MoneyWaiting(_total(approvable), _total(stale), sum(stakes.values()), unfunded)


def _total(runs: list[RunListing]) -> int:
    return sum(parse_amount(run.total) for run in runs)


def utc_day(at_ms: int) -> date:
    return datetime.fromtimestamp(at_ms // 1000, UTC).date()
