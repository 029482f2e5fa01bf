"""Finding payments: by state, recipient, payment, run, transaction hash and the day they were prepared; sorted.

The state index names each payment; the rest is read from the payment record and its newest attempt
(``docs/adr/0047``). Every match is read before the page is cut, so the total and the sort cover all of them.
"""

from __future__ import annotations

from ledger_engine.open_json import Report
from ledger_engine.selectors import account_queries, payout_queries
from ledger_engine.selectors.payout_queries import PaymentListing, ReconciliationItem
from ledger_engine.selectors.view import LedgerView
from porto_console.console.listing import DateRange, Listing, ListQuery, Search, by, by_amount, text
from porto_console.console.services.payouts import PAYMENT_STATES

DEFAULT_STATE = "approved"
ANY_STATE = "all"
LISTING = Listing(
    searches=(Search("recipient", "Recipient ID", text("recipient_id")),
              Search("payment", "Payment ID", text("payment_id")),
              Search("run", "Run ID", text("run_id")),
              Search("transaction_hash", "Transaction hash", lambda row: row["transaction_hashes"])),
    dated=DateRange("prepared", "Prepared from", lambda row: row["prepared_at_ms"]),
    sorts={"prepared": by("prepared_at_ms"), "paid": by("paid_at_ms"), "amount": by_amount("amount"),
           "recipient": by("recipient_id"), "state": by("state"), "run": by("run_id")},
    default_sort="prepared", identity=lambda row: row["payment_id"],
    descending_first=frozenset({"prepared", "paid", "amount"}))


def states(state: str) -> tuple[str, ...]:
    return PAYMENT_STATES if state == ANY_STATE else (state,)


def search(view: LedgerView, state: str, query: ListQuery) -> list[Report]:
    """Every payment in ``state`` (or any) matching ``query``, in its order."""
    rows = payout_queries.payment_search_rows(view, states(state), lambda listing: _cheap_match(listing, query))
    return LISTING.apply(rows, query)


def found_and_queue(view: LedgerView, state: str,
                    query: ListQuery) -> tuple[list[Report], list[ReconciliationItem]]:
    """What the payments screen shows: the payments found, and the payments an observer must still settle."""
    return search(view, state, query), payout_queries.reconciliation_queue(view)


def found_and_names(view: LedgerView, state: str, query: ListQuery) -> tuple[list[Report], dict[str, str]]:
    """What the payments export holds: the payments found, and the display names of the recipients they pay."""
    found = search(view, state, query)
    return found, account_queries.display_names(view, {row["recipient_id"] for row in found})


def _cheap_match(listing: PaymentListing, query: ListQuery) -> bool:
    """What the state index's listing alone decides, before the payment's record is read."""
    return (query.term("recipient").lower() in listing.recipient_id.lower()
            and query.term("run").lower() in listing.run_id.lower()
            and query.term("payment").lower() in listing.payment_id.lower())
