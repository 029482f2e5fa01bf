"""Staff change selectors: requests and decisions about staff accounts, by status and by account.

Each takes a ``LedgerView`` (selectors/view.py) and returns the typed
records of domain/schema/staff.py (docs/adr/0058).
"""

from __future__ import annotations

from ledger_engine.domain.schema.staff import StaffChange, change_key
from ledger_engine.keys import key
from ledger_engine.selectors.view import LedgerView

CHANGE_PREFIX = key("staff_change") + "/"


def changes(view: LedgerView, status: str = "", account_id: str = "") -> list[StaffChange]:
    """Staff changes by change ID, those in ``status`` and about ``account_id`` where given."""
    return [record.data_as(StaffChange) for _key, record in view.records(CHANGE_PREFIX)
            if (not status or record.data["status"] == status)
            and (not account_id or record.data["target"] == account_id)]


def change(view: LedgerView, change_id: str) -> StaffChange | None:
    record = view.record(change_key(change_id))
    return record.data_as(StaffChange) if record else None
