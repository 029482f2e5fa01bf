"""Finding payments: by state, recipient, payment, run, transaction hash and the day they were prepared; sorted.

The state index names each payment; the rest is read from the payment record and its newest attempt
(``docs/adr/0047``). Every match is read before the page is cut, so the total and the sort cover all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Callable

from ledger_engine.amounts import parse_amount
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.projections import payout_queries
from ledger_engine.projections.payout_queries import PaymentListing
from porto_console.console.services.payouts import PAYMENT_STATES

DAY_MS = 86_400_000
DEFAULT_STATE = "approved"
ANY_STATE = "all"
# Sortable columns and how a row sorts by each; ties fall back to the payment ID, so the order is total.
SORTS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "prepared": lambda row: row["prepared_at_ms"],
    "paid": lambda row: row["paid_at_ms"] or 0,
    "amount": lambda row: parse_amount(row["amount"]),
    "recipient": lambda row: row["recipient_id"],
    "state": lambda row: row["state"],
    "run": lambda row: row["run_id"],
}
DEFAULT_SORT = "prepared"


@dataclass(frozen=True)
class PaymentQuery:
    state: str = DEFAULT_STATE  # a payment state, or ANY_STATE
    recipient: str = ""  # part of the recipient ID
    payment: str = ""  # part of the payment ID
    run: str = ""  # part of the run ID
    transaction_hash: str = ""  # part of any attempt's transaction hash
    prepared_from: date | None = None  # UTC days, both ends included
    prepared_to: date | None = None
    sort: str = DEFAULT_SORT
    descending: bool = True

    def states(self) -> tuple[str, ...]:
        return PAYMENT_STATES if self.state == ANY_STATE else (self.state,)


def search(ledger: LedgerOwner, query: PaymentQuery) -> list[dict[str, Any]]:
    """Every payment matching ``query``, in its order."""
    rows = payout_queries.payment_search_rows(ledger.view(), query.states(),
                                              lambda listing: _cheap_match(listing, query))
    found = [row for row in rows if _matches(row, query)]
    found.sort(key=lambda row: row["payment_id"])
    found.sort(key=SORTS[query.sort], reverse=query.descending)
    return found


def _cheap_match(listing: PaymentListing, query: PaymentQuery) -> bool:
    """What the state index's listing alone decides, before the payment's record is read."""
    return (query.recipient.lower() in listing.recipient_id.lower()
            and query.run.lower() in listing.run_id.lower()
            and query.payment.lower() in listing.payment_id.lower())


def _matches(row: dict[str, Any], query: PaymentQuery) -> bool:
    wanted_hash = query.transaction_hash.lower()
    if wanted_hash and not any(wanted_hash in tx.lower() for tx in row["transaction_hashes"]):
        return False
    day = row["prepared_at_ms"] // DAY_MS
    if query.prepared_from is not None and day < _day_number(query.prepared_from):
        return False
    return query.prepared_to is None or day <= _day_number(query.prepared_to)


def _day_number(value: date) -> int:
    return value.toordinal() - date(1970, 1, 1).toordinal()
