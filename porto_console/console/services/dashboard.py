"""The dashboard's figures, each read from a ledger projection, and the daily money series for its charts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from ledger_engine.amounts import parse_amount
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.keys import key
from ledger_engine.layout import INDEXES
from ledger_engine.projections.money_queries import conservation_status
from ledger_engine.projections.payouts import payment_state_prefix, run_status_prefix, update_status_prefix
from porto_console.console.services import staff_changes
from porto_console.console.services.rows import count, rows

OUTBOX_BACKLOG_STATUSES = ("pending", "claimed")
# Which chart an allocation line counts in, by its status: every live line was allocated.
CHART_SERIES = ("allocated", "reserved", "paid")


@dataclass(frozen=True)
class Figures:
    conservation: dict[str, Any] | None  # the last full check; None before the first one
    open_holds: int
    runs_awaiting_approval: int
    recipient_updates_awaiting_approval: int
    uncertain_payments: int
    staff_changes_awaiting_decision: int
    outbox_backlog: int
    daily: dict[str, dict[int, int]]  # series -> UTC day number -> minor units

    @property
    def payouts_blocked(self) -> bool:
        return self.conservation is not None and self.conservation["status"] != "clear"


def figures(ledger: LedgerOwner) -> Figures:
    return Figures(
        conservation=conservation_status(ledger.store),
        open_holds=count(ledger, INDEXES, "hold_open/"),
        runs_awaiting_approval=count(ledger, INDEXES, run_status_prefix("prepared")),
        recipient_updates_awaiting_approval=count(ledger, INDEXES, update_status_prefix("pending")),
        uncertain_payments=count(ledger, INDEXES, payment_state_prefix("uncertain")),
        staff_changes_awaiting_decision=sum(1 for _ in staff_changes.changes(ledger, "pending")),
        outbox_backlog=sum(count(ledger, INDEXES, key("effect_by_status", status) + "/")
                           for status in OUTBOX_BACKLOG_STATUSES),
        daily=daily_amounts(ledger),
    )


def daily_amounts(ledger: LedgerOwner) -> dict[str, dict[int, int]]:
    """Allocated, reserved and paid amounts by allocation day, from every recipient's allocation lines."""
    series: dict[str, Counter] = {name: Counter() for name in CHART_SERIES}
    for _key, line in rows(ledger, INDEXES, key("recipient_line") + "/"):
        amount = parse_amount(line["amount"])
        if line["status"] != "reversed":
            series["allocated"][line["day"]] += amount
        if line["status"] in ("reserved", "paid"):
            series[line["status"]][line["day"]] += amount
    return {name: dict(sorted(values.items())) for name, values in series.items()}
