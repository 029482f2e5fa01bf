"""Day allocation requests as the ledger records them: what finance asked for and how far the owner got."""

from __future__ import annotations

from ledger_engine.domain.commands.money.allocate_day import day_allocation_key
from ledger_engine.domain.schema.money_allocation import DayAllocation
from ledger_engine.keys import key
from ledger_engine.selectors.view import LedgerView

REQUEST_PREFIX = key("day_allocation") + "/"


def day_allocations(view: LedgerView) -> list[DayAllocation]:
    """Every request, newest first."""
    found = [record.data_as(DayAllocation) for _key, record in view.records(REQUEST_PREFIX)]
    return sorted(found, key=lambda request: request["created"]["sequence"], reverse=True)


def day_allocation(view: LedgerView, request_id: str) -> DayAllocation | None:
    record = view.record(day_allocation_key(request_id))
    return record.data_as(DayAllocation) if record else None
