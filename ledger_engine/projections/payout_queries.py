"""Payout reads for the console: runs to approve, run detail, payments, reconciliation, updates, the outbox.

Each read names the ledger sequence it read at. Lists come from the payout
projections (projections/payouts.py) and the effects-by-status index; details
come from the records themselves. No read here backs a money check.

A run's ``status`` is its own life (prepared, approved, cancelled,
invalidated); its true aggregate state also says what became of its payments
(``aggregate_state``): an approved run whose payments a recipient update
cancelled, or a cancelled run that had already paid someone, says so.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

from ledger_engine.amounts import checked_sum, format_amount, parse_amount
from ledger_engine.application.owner import read_head
from ledger_engine.application.records import decode_record
from ledger_engine.domain.commands.money.attempts import attempt_key
from ledger_engine.domain.commands.money.lines import line_key
from ledger_engine.domain.commands.money.batches import batch_key
from ledger_engine.domain.commands.money.payments import IN_FLIGHT, payment_key
from ledger_engine.domain.commands.money.payments import MACHINE as PAYMENT_MACHINE
from ledger_engine.domain.commands.money.payout_runs import run_hash, run_key
from ledger_engine.domain.commands.money.statements import covers
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import key
from ledger_engine.layout import INDEXES, OUTBOX, STATE
from ledger_engine.projections.payouts import (
    payment_state_prefix, run_payments_prefix, run_status_prefix, update_status_prefix,
)
from ledger_engine.storage.rocks import RocksStore


def runs_awaiting_approval(store: RocksStore, *, limit: int = 100) -> dict[str, Any]:
    """Prepared runs, each with its hash, total and preparer (an approver must be someone else)."""
    runs = [{"run_id": index_key.rsplit("/", 1)[1], **entry}
            for index_key, entry in _index_rows(store, run_status_prefix("prepared"), limit)]
    return {"sequence": read_head(store).sequence, "runs": runs}


def run_detail(store: RocksStore, run_id: str) -> dict[str, Any]:
    """A run as frozen, each payment with its state and lines, totals by payment state, and the hash rechecked."""
    sequence = read_head(store).sequence
    run = _record(store, STATE, run_key(run_id), f"payout run {run_id}")
    payments = [_payment_detail(store, frozen) for frozen in run["frozen"]["payments"]]
    totals: dict[str, int] = Counter()
    for payment in payments:
        totals[payment["state"]] += parse_amount(payment["amount"])
    return {
        "sequence": sequence,
        "run_id": run_id,
        "status": run["status"],
        "aggregate": aggregate_state(run["status"], [(p["state"], p["cancel_reason"]) for p in payments]),
        "supersedes": run.get("supersedes"),
        "run_hash": run["run_hash"],
        "run_hash_verified": run_hash(run["frozen"]) == run["run_hash"],
        "asset": run["frozen"]["asset"],
        "total": run["frozen"]["total"],
        "totals_by_state": {state: format_amount(amount) for state, amount in sorted(totals.items())},
        "prepared_by": run["prepared_by"],
        "prepared_at_ms": run["prepared_at_ms"],
        "approval": run["approval"],
        "tombstone": run["tombstone"],
        "payments": payments,
    }


def _payment_detail(store: RocksStore, frozen: dict[str, Any]) -> dict[str, Any]:
    payment = _record(store, STATE, payment_key(frozen["payment_id"]), f"payment {frozen['payment_id']}")
    lines = [_record(store, STATE, line_key(line_id), f"allocation line {line_id}") for line_id in frozen["line_ids"]]
    return {
        **{name: payment[name] for name in ("payment_id", "recipient_id", "recipient_version", "payout_address",
                                            "amount", "state", "effect_id", "attempt_ids", "paid_attempt_id",
                                            "cancel_reason")},
        "held_for": payment.get("held_for"),
        "superseded_by": payment.get("superseded_by"),
        "lines": [{name: line.get(name) for name in ("line_id", "role", "listener_id", "day", "budget_id", "amount",
                                                     "status")} for line in lines],
        "lines_total": format_amount(checked_sum(parse_amount(line["amount"]) for line in lines)),
    }


def aggregate_state(status: str, payments: list[tuple[str, str | None]]) -> dict[str, Any]:
    """What a run amounts to: its status together with what became of its payments ``(state, cancel_reason)``."""
    states = Counter(state for state, _ in payments)
    confirmed, cancelled, total = states["confirmed"], states["cancelled"], len(payments)
    reasons = sorted({reason for state, reason in payments if state == "cancelled" and reason})
    if status == "prepared":
        state = "prepared"
    elif status in ("cancelled", "invalidated"):
        state = f"{status}_with_confirmed_payments" if confirmed else status
    elif confirmed == total:
        state = "paid"
    elif cancelled and confirmed + cancelled == total:
        state = "partially_paid"
    elif cancelled:
        state = "approved_with_cancelled_payments"
    else:
        state = "paying" if confirmed or any(s in IN_FLIGHT or s == "failed" for s in states) else "approved"
    summary = ", ".join(f"{count} {name}" for name, count in sorted(states.items()))
    if reasons:
        summary += f" (cancelled: {', '.join(reasons)})"
    return {"state": state, "payments_by_state": dict(sorted(states.items())), "summary": summary}


def run_aggregates(store: RocksStore, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each listed run's aggregate state, folded from the ``run_payment`` projection."""
    aggregates = {}
    for run_id in run_ids:
        run = _record(store, STATE, run_key(run_id), f"payout run {run_id}")
        payments = [(entry["state"], entry["cancel_reason"])
                    for _, entry in _index_rows(store, run_payments_prefix(run_id), 10_000)]
        aggregates[run_id] = aggregate_state(run["status"], payments)
    return aggregates


def covering_statements(store: RocksStore, run_id: str) -> dict[str, Any]:
    """The confirmed statements an approval of ``run_id`` can cite, and the lines none of them covers.

    A line is covered by a statement of its recipient in a confirmed index
    whose accounting batch was frozen after the line, over its day
    (statements.covers, the rule ApprovePayoutRun applies).
    """
    run = _record(store, STATE, run_key(run_id), f"payout run {run_id}")
    candidates: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for _, raw in store.scan(STATE, b"statement/"):
        statement = decode_record(raw).data
        index = _record(store, STATE, batch_key(statement["index_batch_id"]), "statement index")
        if index["state"] == "confirmed":
            accounting = _record(store, STATE, batch_key(statement["accounting_batch_id"]), "accounting batch")
            candidates.setdefault(statement["recipient_id"], []).append((statement["statement_id"], accounting))
    cited, uncovered = set(), []
    for payment in run["frozen"]["payments"]:
        for line_id in payment["line_ids"]:
            line = _record(store, STATE, line_key(line_id), f"allocation line {line_id}")
            covering = [statement_id for statement_id, batch in candidates.get(payment["recipient_id"], [])
                        if covers(batch, line)]
            if covering:
                cited.add(max(covering))
            else:
                uncovered.append({"recipient_id": payment["recipient_id"], "line_id": line_id})
    return {"sequence": read_head(store).sequence, "statement_ids": sorted(cited), "uncovered": uncovered}


def payments_by_state(store: RocksStore, state: str, *, limit: int = 100) -> dict[str, Any]:
    payments = [{"payment_id": index_key.rsplit("/", 1)[1], **entry}
                for index_key, entry in _index_rows(store, payment_state_prefix(state), limit)]
    return {"sequence": read_head(store).sequence, "state": state, "payments": payments}


def payment_counts(store: RocksStore) -> dict[str, int]:
    """How many payments are in each state, every state of the payment machine included (zeros too)."""
    counts = dict.fromkeys(PAYMENT_MACHINE.transitions, 0)
    for raw_key, _ in store.scan(INDEXES, (key("payment_by_state") + "/").encode()):
        counts[raw_key.decode().split("/")[1]] += 1
    return counts


def reconciliation_queue(store: RocksStore, *, limit: int = 100) -> dict[str, Any]:
    """Payments whose last attempt may still land, with what an observer must look up to settle it.

    Uncertain payments come first; signed and submitted ones follow, since a
    lapsed claim on their effect also waits for an observation.
    """
    sequence = read_head(store).sequence
    queue = []
    for state in ("uncertain", *(state for state in IN_FLIGHT if state != "uncertain")):
        for index_key, _ in _index_rows(store, payment_state_prefix(state), limit - len(queue)):
            queue.append(_reconciliation_item(store, index_key.rsplit("/", 1)[1]))
    return {"sequence": sequence, "payments": queue}


def _reconciliation_item(store: RocksStore, payment_id: str) -> dict[str, Any]:
    payment = _record(store, STATE, payment_key(payment_id), f"payment {payment_id}")
    attempt = _record(store, STATE, attempt_key(payment["attempt_ids"][-1]), "payment attempt")
    effect = _record(store, OUTBOX, payment["effect_id"], f"effect {payment['effect_id']}")
    return {
        "payment_id": payment_id,
        "state": payment["state"],
        "recipient_id": payment["recipient_id"],
        "amount": payment["amount"],
        "observe": {name: attempt[name] for name in ("attempt_id", "transaction_hash", "sender_address",
                                                     "sender_sequence", "expires_at_ms", "outcome")},
        "effect": {"effect_id": effect["effect_id"], "status": effect["status"], "claim": effect["claim"]},
    }


def recipient_updates_awaiting_approval(store: RocksStore, *, limit: int = 100) -> dict[str, Any]:
    """Pending updates with the old and the new address side by side."""
    updates = []
    for index_key, entry in _index_rows(store, update_status_prefix("pending"), limit):
        recipient_id, update_id = index_key.split("/")[-2:]
        updates.append({"recipient_id": recipient_id, "update_id": update_id, **entry})
    return {"sequence": read_head(store).sequence, "updates": updates}


def outbox_backlog(store: RocksStore) -> dict[str, Any]:
    """How many effects there are of each kind in each status."""
    counts: dict[tuple[str, str], int] = Counter()
    for raw_key, _ in store.scan(INDEXES, (key("effect_by_status") + "/").encode()):
        _, status, kind, _ = raw_key.decode().split("/")
        counts[(status, kind)] += 1
    backlog: dict[str, dict[str, int]] = {}
    for (status, kind), count in sorted(counts.items()):
        backlog.setdefault(status, {})[kind] = count
    return {"sequence": read_head(store).sequence, "by_status": backlog}


def _index_rows(store: RocksStore, prefix: str, limit: int) -> list[tuple[str, dict[str, Any]]]:
    rows = []
    for raw_key, raw in store.scan(INDEXES, prefix.encode()):
        if len(rows) >= limit:
            break
        rows.append((raw_key.decode(), orjson.loads(raw)))
    return rows


def _record(store: RocksStore, family: str, record_key: str, what: str) -> dict[str, Any]:
    raw = store.get(family, record_key.encode())
    if raw is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"{what} does not exist")
    return decode_record(raw).data
