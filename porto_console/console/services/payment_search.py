"""Finding payments: by state, recipient, payment, run, transaction hash and the day they were prepared; sorted.

The state index names each payment; the rest is read from the payment record and its newest attempt
(``docs/adr/0047``). Every match is read before the page is cut, so the total and the sort cover all of them.
"""

from __future__ import annotations

from typing import Any, Iterator

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.commands.money.attempts import attempt_key
from ledger_engine.domain.commands.money.payments import payment_key
from ledger_engine.layout import INDEXES, STATE
from ledger_engine.projections.payouts import payment_state_prefix
from porto_console.console.listing import DateRange, Listing, ListQuery, Search, by, by_amount, text
from porto_console.console.services.payouts import PAYMENT_STATES
from porto_console.console.services.rows import rows

DEFAULT_STATE = "approved"
ANY_STATE = "all"
LISTING = Listing(
    searches=(Search("recipient", "Recipient", text("recipient_id")),
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


def search(ledger: LedgerOwner, state: str, query: ListQuery) -> list[dict[str, Any]]:
    """Every payment in ``state`` (or any) matching ``query``, in its order."""
    return LISTING.apply(_rows(ledger, state, query), query)


def _rows(ledger: LedgerOwner, chosen: str, query: ListQuery) -> Iterator[dict[str, Any]]:
    for state in states(chosen):
        for index_key, entry in rows(ledger, INDEXES, payment_state_prefix(state)):
            if _cheap_mismatch(entry, index_key, query):
                continue
            record = ledger.get(STATE, payment_key(index_key.rsplit("/", 1)[1]))
            if record is not None:
                yield _row(ledger, record.data)


def _cheap_mismatch(entry: dict[str, Any], index_key: str, query: ListQuery) -> bool:
    """What the index entry alone rules out, before the record is read."""
    return (query.term("recipient").lower() not in entry["recipient_id"].lower()
            or query.term("run").lower() not in entry["run_id"].lower()
            or query.term("payment").lower() not in index_key.rsplit("/", 1)[1].lower())


def _row(ledger: LedgerOwner, payment: dict[str, Any]) -> dict[str, Any]:
    attempts = [ledger.get(STATE, attempt_key(attempt_id)) for attempt_id in payment["attempt_ids"]]
    attempts = [attempt.data for attempt in attempts if attempt is not None]
    paid = next((attempt for attempt in attempts if attempt["attempt_id"] == payment.get("paid_attempt_id")), None)
    return {
        "payment_id": payment["payment_id"], "state": payment["state"], "run_id": payment["run_id"],
        "recipient_id": payment["recipient_id"], "amount": payment["amount"], "asset": payment["asset"],
        "recipient_version": payment["recipient_version"], "payout_address": payment["payout_address"],
        "held_for": payment.get("held_for"), "prepared_at_ms": payment["created"]["at_ms"],
        "paid_at_ms": paid.get("observed_at_ms") if paid else None,
        "transaction_hash": attempts[-1]["transaction_hash"] if attempts else None,
        "transaction_hashes": [attempt["transaction_hash"] for attempt in attempts],
    }
