"""Finding payments: by state, recipient, payment, run, transaction hash and the day they were prepared; sorted.

The state index names each payment; the rest is read from the payment record and its newest attempt
(``docs/adr/0047``). Every match is read before the page is cut, so the total and the sort cover all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any, Callable, Iterator

from ledger_engine.amounts import parse_amount
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.commands.money.attempts import attempt_key
from ledger_engine.domain.commands.money.payments import payment_key
from ledger_engine.layout import INDEXES, STATE
from ledger_engine.projections.payouts import payment_state_prefix
from porto_console.console.services.payouts import PAYMENT_STATES
from porto_console.console.services.rows import rows

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
    found = [row for row in _rows(ledger, query) if _matches(row, query)]
    found.sort(key=lambda row: row["payment_id"])
    found.sort(key=SORTS[query.sort], reverse=query.descending)
    return found


def _rows(ledger: LedgerOwner, query: PaymentQuery) -> Iterator[dict[str, Any]]:
    for state in query.states():
        for index_key, entry in rows(ledger, INDEXES, payment_state_prefix(state)):
            if _cheap_mismatch(entry, index_key, query):
                continue
            record = ledger.get(STATE, payment_key(index_key.rsplit("/", 1)[1]))
            if record is not None:
                yield _row(ledger, record.data)


def _cheap_mismatch(entry: dict[str, Any], index_key: str, query: PaymentQuery) -> bool:
    """What the index entry alone rules out, before the record is read."""
    return (query.recipient.lower() not in entry["recipient_id"].lower()
            or query.run.lower() not in entry["run_id"].lower()
            or query.payment.lower() not in index_key.rsplit("/", 1)[1].lower())


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
