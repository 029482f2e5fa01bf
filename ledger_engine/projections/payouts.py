"""Payout projections: runs, payments, recipient updates and batches by state, and paid totals.

    payout_run_by_status/<status>/<run_id>                        {"run_hash", "total", "payments", "prepared_by", "prepared_at_ms"}
    payment_by_state/<state>/<payment_id>                         {"run_id", "recipient_id", "amount", "held_for"}
    run_payment/<run_id>/<payment_id>                             {"state", "amount", "cancel_reason"}
    recipient_update_by_status/<status>/<recipient_id>/<update_id> {"old_address", "payout_address", "version", "requested_by", "requested_at_ms"}
    batch_by_state/<state>/<batch_id>                             {"kind"}
    paid_total/<asset>/<recipient_id>                             {"amount", "payments"}

The first five follow one record each (``run_payment`` lets a read fold a
run's true aggregate state from its payments); ``paid_total`` folds the ``PaymentPaid``
events, the memo of what each recipient has been paid. Nothing here backs a
money check.
"""

from __future__ import annotations

from typing import Callable, Iterable

from ledger_engine.amounts import format_amount, parse_amount
from ledger_engine.domain.commands.money.payments import PAID_EVENT
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import JournalEvent, RecordData
from ledger_engine.projections import IndexEntry, IndexReader


def run_payments_prefix(run_id: str) -> str:
    return key("run_payment", run_id) + "/"


def run_status_prefix(status: str) -> str:
    return key("payout_run_by_status", status) + "/"


def payment_state_prefix(state: str) -> str:
    return key("payment_by_state", state) + "/"


def update_status_prefix(status: str) -> str:
    return key("recipient_update_by_status", status) + "/"


def batch_state_prefix(state: str) -> str:
    return key("batch_by_state", state) + "/"


def paid_total_key(asset: str, recipient_id: str) -> str:
    return key("paid_total", asset, recipient_id)


def _run(data: RecordData) -> IndexEntry:
    frozen = data["frozen"]
    return key("payout_run_by_status", data["status"], data["run_id"]), {
        "run_hash": data["run_hash"], "total": frozen["total"], "payments": len(frozen["payments"]),
        "prepared_by": data["prepared_by"], "prepared_at_ms": data["prepared_at_ms"]}


def _payment(data: RecordData) -> list[IndexEntry]:
    return [(key("payment_by_state", data["state"], data["payment_id"]), {
                "run_id": data["run_id"], "recipient_id": data["recipient_id"], "amount": data["amount"],
                "held_for": data.get("held_for")}),
            (key("run_payment", data["run_id"], data["payment_id"]), {
                "state": data["state"], "amount": data["amount"], "cancel_reason": data["cancel_reason"]})]


def _update(data: RecordData) -> IndexEntry:
    return key("recipient_update_by_status", data["status"], data["recipient_id"], data["update_id"]), {
        name: data[name] for name in ("old_address", "payout_address", "version", "requested_by", "requested_at_ms")}


def _batch(data: RecordData) -> IndexEntry:
    return key("batch_by_state", data["state"], data["batch_id"]), {"kind": data["kind"]}


ENTRIES_BY_RECORD: dict[str, Callable[[RecordData], list[IndexEntry]]] = {
    "payment_run": lambda data: [_run(data)],
    "payment": _payment,
    "recipient_update": lambda data: [_update(data)],
    "batch": lambda data: [_batch(data)],
}


class PayoutsProjection:
    record_kinds = frozenset((STATE, kind) for kind in ENTRIES_BY_RECORD)
    event_types = frozenset({PAID_EVENT})

    def record_entries(self, family: str, record_key: str, data: RecordData) -> Iterable[IndexEntry]:
        entries = ENTRIES_BY_RECORD.get(record_key.split("/", 1)[0]) if family == STATE else None
        return entries(data) if entries else ()

    def event_entries(self, sequence: int, index: int, event: JournalEvent, read: IndexReader) -> Iterable[IndexEntry]:
        if event["type"] != PAID_EVENT:
            return ()
        total_key = paid_total_key(event["asset"], event["recipient_id"])
        previous = read(total_key) or {"amount": "0", "payments": 0}
        amount = parse_amount(previous["amount"]) + parse_amount(event["amount"])
        return [(total_key, {"amount": format_amount(amount), "payments": previous["payments"] + 1})]
