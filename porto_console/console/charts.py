"""The dashboard's charts: what each shows, as data the vendored Chart.js draws (static/console/charts.js).

Each chart is a ``Chart``: labels, one or more series of integers, and the unit
they are in. The page carries it as JSON (``json_script``, which no policy
counts as a script) beside a table of the same figures, so the numbers can be
read without the canvas and by a screen reader. Amounts stay integer minor
units here; the page's script scales them for the axis only.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from ledger_engine.domain.ruleset import ASSETS
from ledger_engine.selectors import overview_queries, payout_queries
from ledger_engine.selectors.view import LedgerView
from porto_console.console.labels import human

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
# Open holds by how long they have waited, as ops triage them.
HOLD_AGES = (("under 1 hour", HOUR_MS), ("1 to 24 hours", DAY_MS), ("1 to 7 days", 7 * DAY_MS),
             ("7 to 30 days", 30 * DAY_MS), ("over 30 days", None))


@dataclass(frozen=True)
class Series:
    label: str
    values: list[int]


@dataclass(frozen=True)
class Chart:
    chart_id: str
    title: str
    kind: str  # "bar" or "doughnut"
    axis: str  # what the labels are: "Day", "Waiting", "State"
    labels: list[str]
    series: list[Series]
    unit: str = ""  # an asset for amounts in minor units, "" for counts
    places: int = 0  # the asset's decimal places

    @property
    def data_id(self) -> str:
        return f"{self.chart_id}-data"

    def as_json(self) -> dict:
        return asdict(self)

    @property
    def rows(self) -> list[tuple[str, list[int]]]:
        """The chart's figures by label, for the table beside it."""
        return [(label, [series.values[index] for series in self.series]) for index, label in enumerate(self.labels)]


def day_label(day: int) -> str:
    return datetime.fromtimestamp(day * DAY_MS // 1000, UTC).strftime("%d %b")


def money_per_day(daily: dict[str, dict[int, int]], asset: str = "USDC") -> Chart:
    """Allocated, reserved and paid per allocation day, side by side."""
    days = sorted({day for values in daily.values() for day in values})
    return Chart("chart-money", f"Allocated, reserved and paid per day ({asset})", "bar", "Day",
                 [day_label(day) for day in days],
                 [Series(name.capitalize(), [values.get(day, 0) for day in days]) for name, values in daily.items()],
                 unit=asset, places=ASSETS[asset])


def holds_by_age(view: LedgerView, now_ms: int | None = None) -> Chart:
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    buckets: Counter = Counter()
    for raised_at_ms in overview_queries.open_hold_raised_times(view):
        waited = max(now_ms - raised_at_ms, 0)
        buckets[next(label for label, below in HOLD_AGES if below is None or waited < below)] += 1
    labels = [label for label, _ in HOLD_AGES]
    return Chart("chart-holds", "Open holds by age", "bar", "Waiting", labels, [Series("Open holds", [buckets[label] for label in labels])])


def payments_by_state(view: LedgerView) -> Chart:
    counted = payout_queries.payment_counts(view)
    shown = [state for state, number in counted.items() if number]
    return Chart("chart-payments", "Payments by state", "doughnut", "State", [human(state) for state in shown],
                 [Series("Payments", [counted[state] for state in shown])])
