"""Overview selectors: what waits for someone, the last conservation check, and money by allocation day.

Each takes a ``LedgerView`` (docs/adr/0046) and reads one projection; none
backs a money check.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ledger_engine.amounts import parse_amount
from ledger_engine.keys import key
from ledger_engine.open_json import IndexValue
from ledger_engine.selectors.payout_queries import EFFECT_STATUS_PREFIX, overdue_payments, prepared_runs_by_approvability
from ledger_engine.projections.payouts import payment_state_prefix, run_status_prefix, update_status_prefix
from ledger_engine.selectors.view import LedgerView

OPEN_HOLD_PREFIX = key("hold_open") + "/"
RECIPIENT_LINE_PREFIX = key("recipient_line") + "/"
OUTBOX_BACKLOG_STATUSES = ("pending", "claimed")
# Which series an allocation line counts in, by its status: every live line was allocated.
DAILY_SERIES = ("allocated", "reserved", "paid")


@dataclass(frozen=True, slots=True)
class Waiting:
    open_holds: int
    runs_awaiting_approval: int
    runs_never_approvable: int  # prepared, but another run took some of their lines (``payout_queries.unpayable_lines``)
    recipient_updates_awaiting_approval: int
    uncertain_payments: int
    overdue_payments: int  # in flight long past their transaction's expiry (``payout_queries.overdue_payments``)
    outbox_backlog: int


def conservation_status(view: LedgerView) -> IndexValue | None:
    """The last full conservation check's verdict; ``blocked`` means payouts are blocked; None before the first."""
    return view.entry(key("conservation_status"))


def waiting(view: LedgerView, now_ms: int) -> Waiting:
    return Waiting(
        open_holds=view.count(OPEN_HOLD_PREFIX),
        runs_awaiting_approval=view.count(run_status_prefix("prepared")),
        runs_never_approvable=len(prepared_runs_by_approvability(view)[1]),
        recipient_updates_awaiting_approval=view.count(update_status_prefix("pending")),
        uncertain_payments=view.count(payment_state_prefix("uncertain")),
        overdue_payments=overdue_payments(view, now_ms),
        outbox_backlog=sum(view.count(EFFECT_STATUS_PREFIX + status + "/") for status in OUTBOX_BACKLOG_STATUSES),
    )


def open_hold_raised_times(view: LedgerView) -> list[int]:
    """When each open hold was raised (ms since the epoch), in the open-holds index's order."""
    return [hold["raised_at_ms"] for _components, hold in view.entries(OPEN_HOLD_PREFIX)]


def daily_amounts(view: LedgerView) -> dict[str, dict[int, int]]:
    """Allocated, reserved and paid amounts by allocation day, from every recipient's allocation lines."""
    series: dict[str, Counter[int]] = {name: Counter() for name in DAILY_SERIES}
    for _components, line in view.entries(RECIPIENT_LINE_PREFIX):
        amount = parse_amount(line["amount"])
        if line["status"] != "reversed":
            series["allocated"][line["day"]] += amount
        if line["status"] in ("reserved", "paid"):
            series[line["status"]][line["day"]] += amount
    return {name: dict(sorted(values.items())) for name, values in series.items()}
