"""Payout selectors: runs, payments, payables, statements an approval cites, reconciliation, updates, the outbox.

Every selector takes a ``LedgerView`` (selectors/view.py) and returns typed
records; the console reads payouts through these alone (docs/adr/0046). Lists
come from the payout projections (projections/payouts.py) and the
effects-by-status index; details come from the records themselves. No read
here backs a money check: the rules check again when the command arrives.

A run's ``status`` is its own life (prepared, approved, cancelled,
invalidated); its true aggregate state also says what became of its payments
(``aggregate_state``): an approved run whose payments a recipient update
cancelled, or a cancelled run that had already paid someone, says so.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterator

from ledger_engine.amounts import checked_sum, format_amount, parse_amount
from ledger_engine.domain.commands.money.payments import IN_FLIGHT
from ledger_engine.domain.commands.money.payments import MACHINE as PAYMENT_MACHINE
from ledger_engine.domain.commands.money.payout_runs import run_hash
from ledger_engine.domain.commands.money.statements import covers
from ledger_engine.domain.schema.money_allocation import AllocationLine, line_key
from ledger_engine.domain.schema.money_payouts import (
    ATTEMPT_PREFIX, BATCH_PREFIX, STATEMENT_PREFIX, Batch, Payment, PaymentAttempt, PayoutRun, PlannedPayment,
    Recipient, RecipientUpdate, Statement, attempt_key, batch_key, payment_key, recipient_key, run_key, statement_key,
    update_key,
)
from ledger_engine.domain.schema.streaming import work_key
from ledger_engine.domain.view import Record
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import RecordData, Report, Unvalidated
from ledger_engine.projections import picked
from ledger_engine.projections.payouts import (
    payment_state_prefix, run_payments_prefix, run_status_prefix, update_status_prefix,
)
from ledger_engine.selectors.view import LedgerView

PAYABLE_LINE_PREFIX = key("payable_line") + "/"
EFFECT_STATUS_PREFIX = key("effect_by_status") + "/"
RECIPIENT_PREFIX = key("recipient") + "/"
IN_FLIGHT_OUTCOMES = ("pending", "submitted")  # attempts that may still land
IN_FLIGHT_BATCH_STATES = ("submitted", "uncertain")  # batches whose anchor was broadcast but not yet observed
OVERDUE_AFTER_MS = 10 * 60 * 1000  # past its transaction's expiry, beyond sweeps and retry backoff (300 s)


@dataclass(frozen=True, slots=True)
class RunListing:
    run_id: str
    status: str
    run_hash: str
    total: str
    payments: int
    prepared_by: str
    prepared_at_ms: int
    aggregate: Report | None = None


@dataclass(frozen=True, slots=True)
class PaymentListing:
    payment_id: str
    state: str
    run_id: str
    recipient_id: str
    amount: str
    held_for: dict[str, str] | None


@dataclass(frozen=True, slots=True)
class UpdateListing:
    recipient_id: str
    update_id: str
    status: str
    old_address: str
    payout_address: str
    version: int
    requested_by: str
    requested_at_ms: int


@dataclass(frozen=True)
class Payable:
    """What one recipient is owed and could be paid in a run now."""

    recipient_id: str
    line_ids: list[str]
    amount: int
    version: int
    payout_address: str
    statement_id: str | None  # the newest statement in a confirmed index batch, which approval cites
    # Its day lines among ``line_ids`` (no budget, docs/adr/0073): each ``{"line_id", "day", "artifact"}``.
    day_lines: list[Report] = field(default_factory=list)
    # A prepared run already paying some of these lines: approving both cannot work, so a new run leaves them out.
    waiting_run: str | None = None


@dataclass(frozen=True, slots=True)
class Coverage:
    """The confirmed statements an approval can cite, and each line none of them covers."""

    statement_ids: list[str]
    uncovered: list[tuple[str, str]] = field(default_factory=list)  # (recipient ID, line ID)


@dataclass(frozen=True, slots=True)
class ReconciliationItem:
    payment_id: str
    state: str
    recipient_id: str
    amount: str
    observe: Report  # what an observer must look up
    effect: Report


def runs(view: LedgerView, status: str, *, limit: int | None = None) -> Iterator[RunListing]:
    for (run_id,), entry in view.entries(run_status_prefix(status), limit):
        yield RunListing(run_id=run_id, status=status, **entry)


def run_revision(view: LedgerView, run_id: str) -> int | None:
    record = view.record(run_key(run_id))
    return record.revision if record else None


def expected_run_revision(run_id: str, revision: int) -> Unvalidated:
    """The expected revision a command about run ``run_id`` states, as the envelope carries it."""
    return {"cf": STATE, "key": run_key(run_id), "revision": revision}


def run_detail(view: LedgerView, run_id: str) -> Report:
    """A run as frozen, each payment with its state and lines, totals by payment state, and the hash rechecked."""
    run = view.require(run_key(run_id), f"payout run {run_id}", PayoutRun)
    titles = _WorkTitles(view)
    payments = [_payment_detail(view, frozen, titles) for frozen in run["frozen"]["payments"]]
    totals: dict[str, int] = Counter()
    for payment in payments:
        totals[payment["state"]] += parse_amount(payment["amount"])
    return {
        "sequence": view.sequence,
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


def _payment_detail(view: LedgerView, frozen: PlannedPayment, titles: "_WorkTitles") -> Report:
    payment = view.require(payment_key(frozen["payment_id"]), f"payment {frozen['payment_id']}", Payment)
    lines = [view.require(line_key(line_id), f"allocation line {line_id}", AllocationLine)
             for line_id in frozen["line_ids"]]
    return {
        **picked(payment, ("payment_id", "recipient_id", "recipient_version", "payout_address", "amount", "state",
                           "effect_id", "attempt_ids", "paid_attempt_id", "cancel_reason")),
        "held_for": payment.get("held_for"),
        "superseded_by": payment.get("superseded_by"),
        "lines": [_line_shown(line, titles) for line in lines],
        "lines_total": format_amount(checked_sum(parse_amount(line["amount"]) for line in lines)),
    }


class _WorkTitles(dict[str, str | None]):
    """Each work's display title (none if it has none), read once for a whole run."""

    def __init__(self, view: LedgerView) -> None:
        super().__init__()
        self.view = view

    def __missing__(self, work_id: str) -> str | None:
        work = self.view.record(work_key(work_id))
        title = self[work_id] = work.data.get("title") if work is not None else None
        return title


def _line_shown(line: AllocationLine, titles: _WorkTitles) -> Report:
    """A run's line as its page lists it: what it is, and the work it pays for with the work's title if it has
    one."""
    shown: Report = {name: line.get(name) for name in ("line_id", "role", "listener_id", "day", "budget_id",
                                                                "amount", "status", "artifact", "work_id")}
    title = titles[line["work_id"]] if line.get("work_id") else None
    if title is not None:
        shown["title"] = title
    return shown


def aggregate_state(status: str, payments: list[tuple[str, str | None]]) -> Report:
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


def run_aggregates(view: LedgerView, run_ids: list[str]) -> dict[str, Report]:
    """Each listed run's aggregate state, folded from the ``run_payment`` projection."""
    aggregates = {}
    for run_id in run_ids:
        run = view.require(run_key(run_id), f"payout run {run_id}", PayoutRun)
        payments = [(entry["state"], entry["cancel_reason"]) for _, entry in view.entries(run_payments_prefix(run_id))]
        aggregates[run_id] = aggregate_state(run["status"], payments)
    return aggregates


def payables(view: LedgerView) -> list[Payable]:
    """Every recipient with payable allocation lines, by recipient ID."""
    lines: dict[str, list[tuple[str, int]]] = defaultdict(list)
    day_lines: dict[str, list[Report]] = defaultdict(list)
    for (recipient_id, line_id), line in view.entries(PAYABLE_LINE_PREFIX):
        lines[recipient_id].append((line_id, parse_amount(line["amount"])))
        if "artifact" in line:
            day_lines[recipient_id].append({"line_id": line_id, "day": line["day"], "artifact": line["artifact"]})
    statements, waiting = newest_confirmed_statements(view), waiting_lines(view)
    found = []
    for recipient_id in sorted(lines):
        recipient = view.require(recipient_key(recipient_id), f"recipient {recipient_id}", Recipient)
        line_ids = sorted(line_id for line_id, _ in lines[recipient_id])
        found.append(Payable(recipient_id, line_ids, checked_sum(amount for _, amount in lines[recipient_id]),
                             recipient["version"], recipient["payout_address"], statements.get(recipient_id),
                             sorted(day_lines[recipient_id], key=lambda line: line["line_id"]),
                             next((waiting[line_id] for line_id in line_ids if line_id in waiting), None)))
    return found


def waiting_lines(view: LedgerView) -> dict[str, str]:
    """Each line a prepared run would pay, and that run (the oldest, where two runs name one line).

    A prepared run reserves nothing until it is approved, so the same payable lines can sit in two runs; only the
    first approved pays them, and the other can then never be approved.
    """
    waiting: dict[str, str] = {}
    for listing in sorted(runs(view, "prepared"), key=lambda run: (run.prepared_at_ms, run.run_id)):
        run = view.require(run_key(listing.run_id), f"payout run {listing.run_id}", PayoutRun)
        for payment in run["frozen"]["payments"]:
            for line_id in payment["line_ids"]:
                waiting.setdefault(line_id, listing.run_id)
    return waiting


def prepared_runs_by_approvability(view: LedgerView) -> tuple[list[RunListing], list[RunListing]]:
    """Prepared runs that can still be approved, and those another run took lines from (to cancel)."""
    approvable: list[RunListing] = []
    stale: list[RunListing] = []
    for run in runs(view, "prepared"):
        (stale if unpayable_lines(view, run.run_id) else approvable).append(run)
    return approvable, stale


def unpayable_lines(view: LedgerView, run_id: str) -> list[Report]:
    """The lines of prepared run ``run_id`` that are no longer payable (another run reserved or paid them, or a
    correction reversed them): while there is one, the run can never be approved. None for any other run."""
    record = view.record(run_key(run_id))
    if record is None or record.data["status"] != "prepared":
        return []
    run, found = record.data_as(PayoutRun), []
    for payment in run["frozen"]["payments"]:
        for line_id in payment["line_ids"]:
            line = view.require(line_key(line_id), f"allocation line {line_id}", AllocationLine)
            if line["status"] != "payable":
                found.append({"line_id": line_id, "recipient_id": payment["recipient_id"], "status": line["status"]})
    return found


def run_statements(view: LedgerView, run_id: str) -> dict[str, str]:
    """The statement each recipient of run ``run_id`` can be sent: the one its approval cited, or, before approval,
    the newest confirmed one (what an approval would cite). Recipients with none are left out."""
    run = view.require(run_key(run_id), f"payout run {run_id}", PayoutRun)
    recipients = {payment["recipient_id"] for payment in run["frozen"]["payments"]}
    if run["approval"] is None:
        return {recipient: statement for recipient, statement in newest_confirmed_statements(view).items()
                if recipient in recipients}
    cited = (view.require(statement_key(statement_id), f"statement {statement_id}", Statement)
             for statement_id in run["approval"]["statement_ids"])
    return {statement["recipient_id"]: statement["statement_id"] for statement in cited}


def newest_confirmed_statements(view: LedgerView) -> dict[str, str]:
    """Each recipient's newest statement whose index batch is confirmed: the one its latest index froze (statement
    IDs are random, so their order says nothing of age)."""
    newest: dict[str, Statement] = {}
    for _key, record in view.records(STATEMENT_PREFIX):
        statement = record.data_as(Statement)
        batch = view.record(batch_key(statement["index_batch_id"]))
        if batch is None or batch.data["state"] != "confirmed":
            continue
        held = newest.get(statement["recipient_id"])
        if held is None or statement["created"]["sequence"] > held["created"]["sequence"]:
            newest[statement["recipient_id"]] = statement
    return {recipient_id: statement["statement_id"] for recipient_id, statement in newest.items()}


def covering_statements(view: LedgerView, run_id: str) -> Coverage:
    """The confirmed statements an approval of ``run_id`` can cite, and the lines none of them covers.

    A line is covered by a statement of its recipient in a confirmed index
    whose accounting batch was frozen after the line, over its day
    (statements.covers, the rule ApprovePayoutRun applies). Only the run's
    recipients' statements are read.
    """
    run = view.require(run_key(run_id), f"payout run {run_id}", PayoutRun)
    candidates = _confirmed_candidates(view, {payment["recipient_id"] for payment in run["frozen"]["payments"]})
    cited, uncovered = set(), []
    for payment in run["frozen"]["payments"]:
        for line_id in payment["line_ids"]:
            line = view.require(line_key(line_id), f"allocation line {line_id}", AllocationLine)
            covering = [statement_id for statement_id, batch in candidates.get(payment["recipient_id"], [])
                        if covers(batch, line)]
            if covering:
                cited.add(max(covering))
            else:
                uncovered.append((payment["recipient_id"], line_id))
    return Coverage(sorted(cited), uncovered)


def approval_citations(view: LedgerView, run_id: str) -> list[str]:
    """The statements an approval of ``run_id`` cites: its approval's own once it is approved (an approval
    posted again restates them), else those that cover it now (``covering_statements``)."""
    approval = view.require(run_key(run_id), f"payout run {run_id}", PayoutRun).get("approval")
    return approval["statement_ids"] if approval else covering_statements(view, run_id).statement_ids


def _confirmed_candidates(view: LedgerView, recipients: set[str]) -> dict[str, list[tuple[str, Batch]]]:
    candidates: dict[str, list[tuple[str, Batch]]] = {}
    for _key, record in view.records(STATEMENT_PREFIX):
        statement = record.data_as(Statement)
        if statement["recipient_id"] not in recipients:
            continue
        index = view.require(batch_key(statement["index_batch_id"]), "statement index", Batch)
        if index["state"] == "confirmed":
            accounting = view.require(batch_key(statement["accounting_batch_id"]), "accounting batch", Batch)
            candidates.setdefault(statement["recipient_id"], []).append((statement["statement_id"], accounting))
    return candidates


def payment_counts(view: LedgerView) -> dict[str, int]:
    """How many payments are in each state, every state of the payment machine included (zeros too)."""
    return {state: view.count(payment_state_prefix(state)) for state in PAYMENT_MACHINE.transitions}


def overdue_payments(view: LedgerView, now_ms: int) -> int:
    """In-flight payments whose last transaction expired more than ``OVERDUE_AFTER_MS`` before ``now_ms``.

    Once a transaction's expiry has passed, the next look settles it (landed,
    failed or expired), so a payment still in flight long after it has lost
    its way: a follow-up that cannot run, or a chain that cannot say.
    """
    return sum(1 for state in IN_FLIGHT for (payment_id,), _ in view.entries(payment_state_prefix(state))
               if _last_attempt(view, payment_id)["expires_at_ms"] + OVERDUE_AFTER_MS < now_ms)


def _last_attempt(view: LedgerView, payment_id: str) -> PaymentAttempt:
    payment = view.require(payment_key(payment_id), f"payment {payment_id}", Payment)
    return view.require(attempt_key(payment["attempt_ids"][-1]), "payment attempt", PaymentAttempt)


def payments(view: LedgerView, state: str, *, limit: int | None = None) -> Iterator[PaymentListing]:
    for (payment_id,), entry in view.entries(payment_state_prefix(state), limit):
        yield PaymentListing(payment_id=payment_id, state=state, run_id=entry["run_id"],
                             recipient_id=entry["recipient_id"], amount=entry["amount"], held_for=entry["held_for"])


def reconciliation_queue(view: LedgerView, *, limit: int = 100) -> list[ReconciliationItem]:
    """Payments whose last attempt may still land, with what an observer must look up to settle it.

    Uncertain payments come first; signed and submitted ones follow, since a
    lapsed claim on their effect also waits for an observation.
    """
    queue: list[ReconciliationItem] = []
    for state in ("uncertain", *(state for state in IN_FLIGHT if state != "uncertain")):
        for (payment_id,), _ in view.entries(payment_state_prefix(state), limit - len(queue)):
            queue.append(_reconciliation_item(view, payment_id))
    return queue


def _reconciliation_item(view: LedgerView, payment_id: str) -> ReconciliationItem:
    payment = view.require(payment_key(payment_id), f"payment {payment_id}", Payment)
    attempt = _last_attempt(view, payment_id)
    effect = view.effect(payment["effect_id"])
    return ReconciliationItem(
        payment_id=payment_id, state=payment["state"], recipient_id=payment["recipient_id"], amount=payment["amount"],
        observe=picked(attempt, ("attempt_id", "transaction_hash", "sender_address", "sender_sequence",
                                 "expires_at_ms", "outcome")),
        effect={"effect_id": effect["effect_id"], "status": effect["status"], "claim": effect["claim"]})


def recipient_updates(view: LedgerView, status: str, *, limit: int | None = None) -> Iterator[UpdateListing]:
    """Updates in ``status`` with the old and the new address side by side."""
    for (recipient_id, update_id), entry in view.entries(update_status_prefix(status), limit):
        yield UpdateListing(recipient_id=recipient_id, update_id=update_id, status=status, **entry)


def outbox_backlog(view: LedgerView) -> dict[str, dict[str, int]]:
    """How many effects there are of each kind in each status: ``{status: {kind: count}}``."""
    counts: dict[tuple[str, str], int] = Counter()
    for (status, kind, _effect_id), _ in view.entries(EFFECT_STATUS_PREFIX):
        counts[(status, kind)] += 1
    backlog: dict[str, dict[str, int]] = {}
    for (status, kind), count in sorted(counts.items()):
        backlog.setdefault(status, {})[kind] = count
    return backlog


def recipient(view: LedgerView, recipient_id: str) -> Recipient | None:
    record = view.record(recipient_key(recipient_id))
    return record.data_as(Recipient) if record else None


def recipients(view: LedgerView) -> list[Recipient]:
    return [record.data_as(Recipient) for _key, record in view.records(RECIPIENT_PREFIX)]


def recipient_update(view: LedgerView, recipient_id: str, update_id: str) -> RecipientUpdate | None:
    record = view.record(update_key(recipient_id, update_id))
    return record.data_as(RecipientUpdate) if record else None


def payment_with_attempts(view: LedgerView, payment_id: str) -> tuple[RecordData | None, list[RecordData]]:
    """The payment and its signed attempts, each with its revision; ``(None, [])`` when there is no such payment."""
    record = view.record(payment_key(payment_id))
    if record is None:
        return None, []
    attempts = [view.require_record(attempt_key(attempt_id), f"payment attempt {attempt_id}")
                for attempt_id in record.data_as(Payment)["attempt_ids"]]
    return _with_revision(record), [_with_revision(attempt) for attempt in attempts]


def in_flight_attempts(view: LedgerView, *, cursor: str | None = None,
                       limit: int = 50) -> tuple[list[RecordData], str | None]:
    """Attempts that may still land, in attempt ID order after ``cursor``, and the next cursor."""
    return _page(view, ATTEMPT_PREFIX, "attempt_id", cursor, limit,
                 lambda attempt: attempt["outcome"] in IN_FLIGHT_OUTCOMES)


def in_flight_batches(view: LedgerView, *, cursor: str | None = None,
                      limit: int = 50) -> tuple[list[RecordData], str | None]:
    """Batches whose anchor was broadcast and not yet observed, in batch ID order after ``cursor``."""
    return _page(view, BATCH_PREFIX, "batch_id", cursor, limit,
                 lambda batch: batch["state"] in IN_FLIGHT_BATCH_STATES and batch["transaction_hash"] is not None)


def _page(view: LedgerView, prefix: str, id_field: str, cursor: str | None, limit: int,
          wanted: Callable[[RecordData], bool]) -> tuple[list[RecordData], str | None]:
    found: list[RecordData] = []
    for _key, record in view.records(prefix, after=prefix + cursor if cursor else None):
        if wanted(record.data):
            if len(found) == limit:
                return found, found[-1][id_field]
            found.append(_with_revision(record))
    return found, None


def _with_revision(record: Record) -> RecordData:
    return {**record.data, "revision": record.revision}


def payment_search_rows(view: LedgerView, states: tuple[str, ...],
                        keep: Callable[[PaymentListing], bool]) -> list[Report]:
    """Each payment in ``states`` whose listing ``keep`` accepts, with its newest transaction hash and paid time.

    ``keep`` sees only the state index's listing, so it rules payments out before their records are read.
    """
    found = []
    for state in states:
        for listing in payments(view, state):
            record = view.record(payment_key(listing.payment_id)) if keep(listing) else None
            if record is not None:
                found.append(_search_row(view, record.data_as(Payment)))
    return found


def _search_row(view: LedgerView, payment: Payment) -> Report:
    records = [view.record(attempt_key(attempt_id)) for attempt_id in payment["attempt_ids"]]
    attempts = [record.data_as(PaymentAttempt) for record in records if record is not None]
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
