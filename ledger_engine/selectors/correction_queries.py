"""Correction selectors: requests by status, and one request beside the lines it names as they are now.

Each takes a ``LedgerView`` (selectors/view.py) and returns the typed
records of domain/schema/money_allocation.py (docs/adr/0058).
"""

from __future__ import annotations


from ledger_engine.domain.schema.money_allocation import (
    AllocationLine, CorrectionRequest, correction_request_key, line_key,
)
from ledger_engine.open_json import IndexValue
from ledger_engine.projections.money import correction_request_prefix
from ledger_engine.selectors.view import LedgerView


def corrections(view: LedgerView, status: str) -> list[IndexValue]:
    """Requests in ``status`` by correction ID, each as the status index lists it."""
    return [{"correction_id": correction_id, "status": status, **entry}
            for (correction_id,), entry in view.entries(correction_request_prefix(status))]


def request(view: LedgerView, correction_id: str) -> CorrectionRequest | None:
    record = view.record(correction_request_key(correction_id))
    return record.data_as(CorrectionRequest) if record else None


def lines_now(view: LedgerView, correction: CorrectionRequest) -> list[AllocationLine]:
    """Each line the request reverses, as the ledger holds it now."""
    return [view.require(line_key(line["line_id"]), f"allocation line {line['line_id']}", AllocationLine)
            for line in correction["reverses"]]
