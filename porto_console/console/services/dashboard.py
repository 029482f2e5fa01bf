"""The dashboard's figures, each read through a ledger selector, and the daily money series for its charts."""

from __future__ import annotations

import time
from dataclasses import dataclass

from ledger_engine.open_json import IndexValue
from ledger_engine.selectors import overview_queries, staff_queries
from ledger_engine.selectors.view import LedgerView

CHART_SERIES = overview_queries.DAILY_SERIES


@dataclass(frozen=True)
class Figures:
    conservation: IndexValue | None  # the last full check; None before the first one
    open_holds: int
    runs_awaiting_approval: int
    runs_never_approvable: int
    recipient_updates_awaiting_approval: int
    uncertain_payments: int
    overdue_payments: int
    staff_changes_awaiting_decision: int
    outbox_backlog: int
    daily: dict[str, dict[int, int]]  # series -> UTC day number -> minor units

    @property
    def payouts_blocked(self) -> bool:
        return self.conservation is not None and self.conservation["status"] != "clear"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def figures(view: LedgerView) -> Figures:
    waiting = overview_queries.waiting(view, now_ms())
    return Figures(
        conservation=overview_queries.conservation_status(view),
        open_holds=waiting.open_holds,
        runs_awaiting_approval=waiting.runs_awaiting_approval,
        runs_never_approvable=waiting.runs_never_approvable,
        recipient_updates_awaiting_approval=waiting.recipient_updates_awaiting_approval,
        uncertain_payments=waiting.uncertain_payments,
        overdue_payments=waiting.overdue_payments,
        staff_changes_awaiting_decision=len(staff_queries.changes(view, "pending")),
        outbox_backlog=waiting.outbox_backlog,
        daily=overview_queries.daily_amounts(view),
    )
