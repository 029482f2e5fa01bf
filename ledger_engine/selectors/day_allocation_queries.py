"""Day allocation requests as the ledger records them: what finance asked for and how far the owner got."""

from __future__ import annotations

from typing import Any

from ledger_engine.domain.commands.money.allocate_day import day_allocation_key
from ledger_engine.keys import key
from ledger_engine.selectors.view import LedgerView

REQUEST_PREFIX = key("day_allocation") + "/"


def day_allocations(view: LedgerView) -> list[dict[str, Any]]:
    """Every request, newest first."""
    found = [record.data for _key, record in view.records(REQUEST_PREFIX)]
    return sorted(found, key=lambda request: request["created"]["sequence"], reverse=True)


def day_allocation(view: LedgerView, request_id: str) -> dict[str, Any] | None:
    record = view.record(day_allocation_key(request_id))
    return record.data if record else None
