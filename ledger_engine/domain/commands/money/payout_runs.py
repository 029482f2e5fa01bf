"""PreparePayoutRun, ApprovePayoutRun and CancelPayoutRun.

Preparing freezes a run: exact allocation lines per payment, one payment per
recipient, the recipient's address and version, amounts and the IDs of the
payments and their effects. The run hash is

    SHA-256( UTF8("porto:london:payout-run:v1\\n") || JCS(frozen) )

where ``frozen`` is ``{"run_id", "asset", "payments", "total"}`` and each
payment is its plan as submitted plus the recipient's ``payout_address``
(``frozen_run``). The preparer states the hash; the rule recomputes it from
the ledger and rejects a difference with RUN_HASH_MISMATCH, so the hash names
exactly what the preparer saw. The run record keeps ``frozen`` verbatim.

Approval, by a finance actor other than the preparer, restates that hash and
names confirmed statements covering every line; it may carry a cap, the most
it authorises, which the run's total must not exceed and which signing holds
the run to. It reserves each line once, posts the reservation and puts one
``payment.transfer`` effect per payment in the outbox. Cancelling is allowed until an attempt is signed: it releases what is
reserved and unpaid, cancels the effects and leaves the run as a tombstone.
Runs go prepared -> approved, and prepared | approved -> cancelled;
a recipient update invalidates a prepared run (prepared -> invalidated) and
prepares the recipient's unsigned payments again, at the new address, as a
new run that needs approval like any other (``readdress``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Mapping

from pydantic import AfterValidator, Field, model_validator

from ledger_engine.amounts import Amount, checked_sum, format_amount, parse_amount
from ledger_engine.canonical import domain_hash
from ledger_engine.domain.actors import require_other_actor
from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.commands.money import payments
from ledger_engine.domain.commands.money.outbox import PAYMENT_TRANSFER
from ledger_engine.domain.commands.money.recipients import load_recipient, require_no_pending_update
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.commands.money.statements import require_confirmed_statements
from ledger_engine.domain.invariants import require_conserved, require_payouts_unblocked
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_payouts import (
    FrozenRun, NewPayment, Payment, PayoutRun, PlannedPayment, RecipientUpdate, payment_key, run_key,
)
from ledger_engine.domain.view import shaped
from ledger_engine.domain.types import Count, Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import OUTBOX, STATE
from ledger_engine.open_json import CommandResult, RecordData, Unvalidated

RUN_HASH_DOMAIN = "porto:london:payout-run:v1\n"
SUCCESSOR_DOMAIN = "porto:london:successor-id:v1\n"
MAX_PAYMENTS = 1_000
MAX_LINES_PER_PAYMENT = 5_000
TRANSFER_FIELDS = ("payment_id", "run_id", "recipient_id", "payout_address", "asset", "amount")


def _sorted_distinct(values: list[str]) -> list[str]:
    if values != sorted(set(values)):
        raise ValueError("the IDs must be sorted and distinct")
    return values


SortedIds = Annotated[list[Identifier], AfterValidator(_sorted_distinct)]


class PaymentPlan(Payload):
    payment_id: Identifier
    effect_id: Identifier
    recipient_id: Identifier
    recipient_version: Count = Field(ge=1)
    amount: Amount = Field(gt=0)
    line_ids: SortedIds = Field(min_length=1, max_length=MAX_LINES_PER_PAYMENT)


class PreparePayoutRunPayload(Payload):
    run_id: Identifier
    asset: Literal["USDC"]
    payments: list[PaymentPlan] = Field(min_length=1, max_length=MAX_PAYMENTS)
    run_hash: Digest

    @model_validator(mode="after")
    def _distinct(self) -> "PreparePayoutRunPayload":
        payment_ids = [plan.payment_id for plan in self.payments]
        if payment_ids != sorted(set(payment_ids)):
            raise ValueError("payments must be sorted by payment_id and distinct")
        for field in ("recipient_id", "effect_id"):
            values = [getattr(plan, field) for plan in self.payments]
            if len(set(values)) != len(values):
                raise ValueError(f"each payment needs its own {field}")
        line_ids = [line_id for plan in self.payments for line_id in plan.line_ids]
        if len(set(line_ids)) != len(line_ids):
            raise ValueError("an allocation line can be in only one payment of a run")
        return self


class ApprovePayoutRunPayload(Payload):
    run_id: Identifier
    run_hash: Digest
    statement_ids: SortedIds = Field(min_length=1, max_length=MAX_PAYMENTS)
    cap: Amount | None = None  # the most this approval authorises; the ledger holds the run to it


CancelReason = Literal["prepared_in_error", "amounts_disputed", "recipient_disputed", "superseded"]


class CancelPayoutRunPayload(Payload):
    run_id: Identifier
    reason: CancelReason
    note_digest: Digest | None = None  # the canceller's free-text note, kept as private evidence


def frozen_run(run_id: str, asset: str, frozen_payments: list[PlannedPayment]) -> FrozenRun:
    """What the run hash covers; each payment is a plan in JSON form plus ``payout_address``."""
    total = checked_sum(parse_amount(payment["amount"]) for payment in frozen_payments)
    return {"run_id": run_id, "asset": asset, "payments": frozen_payments, "total": format_amount(total)}


def run_hash(frozen: FrozenRun) -> str:
    return domain_hash(RUN_HASH_DOMAIN, frozen)


def load_run(changes: Changes, run_id: str) -> PayoutRun:
    return load(changes, run_key(run_id), f"payout run {run_id}", PayoutRun)


def run_payments(changes: Changes, run: PayoutRun) -> list[Payment]:
    return [payments.load_payment(changes, payment["payment_id"]) for payment in run["frozen"]["payments"]]


@command("PreparePayoutRun", payload=PreparePayoutRunPayload, roles={"finance"})
def prepare_payout_run(ctx: RuleContext, p: PreparePayoutRunPayload) -> CommandResult:
    frozen = frozen_run(p.run_id, p.asset, [_frozen_payment(ctx.changes, plan.model_dump(mode="json"))
                                            for plan in p.payments])
    digest = create_run(ctx, frozen, prepared_by=ctx.actor_id, correlation_id=f"payout_run:{p.run_id}")
    require(digest == p.run_hash, ErrorCode.RUN_HASH_MISMATCH,
            f"payout run {p.run_id} hashes to {digest}, not the stated {p.run_hash}")
    return {"run_id": p.run_id, "run_hash": digest, "total": frozen["total"]}


def create_run(ctx: RuleContext, frozen: FrozenRun, *, prepared_by: str, correlation_id: str,
               supersedes: RecordData | None = None) -> str:
    """A prepared run of ``frozen`` payments over payable lines; returns its hash."""
    changes, run_id = ctx.changes, frozen["run_id"]
    require(changes.get(STATE, run_key(run_id)) is None, ErrorCode.ALREADY_EXISTS, f"payout run {run_id} already exists")
    planned: list[NewPayment] = [{**payment, "run_id": run_id, "asset": frozen["asset"],
                                  "correlation_id": correlation_id} for payment in frozen["payments"]]
    for payment in planned:
        payments.payable_lines(changes, payment)
    digest = run_hash(frozen)
    for payment in planned:
        payments.create_payment(changes, payment, created(ctx))
    changes.put_state(run_key(run_id), {
        "run_id": run_id,
        "status": "prepared",
        "run_hash": digest,
        "frozen": frozen,
        "prepared_by": prepared_by,
        "prepared_at_ms": ctx.now_ms,
        "approval": None,
        "tombstone": None,
        "supersedes": supersedes,
        "correlation_id": correlation_id,
        "created": created(ctx),
    })
    changes.event("PayoutRunPrepared", run_id=run_id, run_hash=digest, total=frozen["total"],
                  payments=len(frozen["payments"]), supersedes=supersedes)
    return digest


def _frozen_payment(changes: Changes, plan: Unvalidated) -> PlannedPayment:
    """A plan as the run freezes it: the recipient's stated version, and that version's address."""
    recipient = load_recipient(changes, plan["recipient_id"])
    require(recipient["version"] == plan["recipient_version"], ErrorCode.STALE_REVISION,
            f"recipient {plan['recipient_id']} is at version {recipient['version']}, not {plan['recipient_version']}")
    require(changes.get(STATE, payment_key(plan["payment_id"])) is None, ErrorCode.ALREADY_EXISTS,
            f"payment {plan['payment_id']} already exists")
    require(changes.get(OUTBOX, plan["effect_id"]) is None, ErrorCode.ALREADY_EXISTS,
            f"effect {plan['effect_id']} already exists")
    return shaped({**plan, "payout_address": recipient["payout_address"]}, PlannedPayment)


def successor_id(kind: str, *parts: str) -> str:
    """An ID a rule derives: ``<kind>-`` and 32 hex digits of SHA-256 over the parts it follows from
    (docs/spec/engine-and-journal.md §12)."""
    return f"{kind}-{domain_hash(SUCCESSOR_DOMAIN, [kind, *parts])[:32]}"


def readdress(ctx: RuleContext, run: PayoutRun, moved: list[Payment], update: RecipientUpdate) -> str:
    """Prepare ``moved`` payments of ``run`` again, as a new run at their recipients' current versions.

    The payments themselves were cancelled (or their run invalidated) by the
    caller; the new run needs an approval like any other, by someone other than
    the finance actor who approved the address change.
    """
    new_run_id = successor_id("run", run["run_id"], update["update_id"])
    plans = [{"payment_id": successor_id("payment", payment["payment_id"], update["update_id"]),
              "effect_id": successor_id("effect", payment["payment_id"], update["update_id"]),
              "recipient_id": payment["recipient_id"],
              "recipient_version": load_recipient(ctx.changes, payment["recipient_id"])["version"],
              "amount": payment["amount"], "line_ids": payment["line_ids"]} for payment in moved]
    frozen = frozen_run(new_run_id, run["frozen"]["asset"],
                        sorted((_frozen_payment(ctx.changes, plan) for plan in plans),
                               key=lambda payment: payment["payment_id"]))
    decided_by = update["decision"]["decided_by"] if update["decision"] else ctx.actor_id
    create_run(ctx, frozen, prepared_by=decided_by,
               correlation_id=run.get("correlation_id") or f"payout_run:{run['run_id']}",
               supersedes={"run_id": run["run_id"], "update_id": update["update_id"],
                           "payment_ids": [payment["payment_id"] for payment in moved],
                           "unapproved_preparers": unapproved_preparers(run)})
    for payment, plan in zip(moved, plans):
        old = payments.load_payment(ctx.changes, payment["payment_id"])
        assert old["state"] == "cancelled", old
        ctx.changes.put_state(payment_key(old["payment_id"]), {**old, "superseded_by": plan["payment_id"]})
    return new_run_id


def unapproved_preparers(run: PayoutRun) -> list[str]:
    """Who chose what ``run`` pays with no one else's approval yet: its preparer, and those of the unapproved runs
    it was prepared again from. A run some other actor approved was reviewed, so it passes on nobody."""
    if run["approval"] is not None:
        return []
    return sorted({run["prepared_by"], *_inherited_preparers(run)})


def _inherited_preparers(run: PayoutRun) -> list[str]:
    """The unapproved preparers of the run ``run`` was prepared again from, if any."""
    preparers: list[str] = (run.get("supersedes") or {}).get("unapproved_preparers", [])
    return preparers


@command("ApprovePayoutRun", payload=ApprovePayoutRunPayload, roles={"finance"}, step_up=True)
def approve_payout_run(ctx: RuleContext, p: ApprovePayoutRunPayload) -> CommandResult:
    changes = ctx.changes
    run = load_run(changes, p.run_id)
    require(run["status"] == "prepared", ErrorCode.INVALID_STATE, f"payout run {p.run_id} is {run['status']}")
    require_other_actor(ctx, run["prepared_by"], "prepared this payout run")
    for preparer in _inherited_preparers(run):
        require_other_actor(ctx, preparer, "prepared the unapproved run this one was prepared again from")
    require(p.run_hash == run["run_hash"], ErrorCode.RUN_HASH_MISMATCH,
            f"payout run {p.run_id} was frozen with hash {run['run_hash']}, not {p.run_hash}")
    require(p.cap is None or parse_amount(run["frozen"]["total"]) <= p.cap, ErrorCode.APPROVAL_CAP_EXCEEDED,
            f"payout run {p.run_id} totals {run['frozen']['total']}, more than the approval's cap {p.cap}")
    planned = run_payments(changes, run)
    require_confirmed_statements(changes, p.statement_ids, planned)
    for payment in planned:
        require_no_pending_update(changes, payment["recipient_id"])
        payments.reserve(changes, payment)
        payments.move(changes, payment, "approved")
        changes.effect(payment["effect_id"], PAYMENT_TRANSFER.name, _transfer(payment))
    approval = {"approved_by": ctx.actor_id, "approved_at_ms": ctx.now_ms, "statement_ids": list(p.statement_ids),
                "cap": None if p.cap is None else format_amount(p.cap)}
    changes.put_state(run_key(p.run_id), {**run, "status": "approved", "approval": approval})
    changes.event("PayoutRunApproved", run_id=p.run_id, run_hash=run["run_hash"], total=run["frozen"]["total"],
                  prepared_by=run["prepared_by"], approved_by=ctx.actor_id)
    require_payouts_unblocked(changes)
    return {"run_id": p.run_id, "payment_ids": [payment["payment_id"] for payment in planned]}


@command("CancelPayoutRun", payload=CancelPayoutRunPayload, roles={"finance"})
def cancel_payout_run(ctx: RuleContext, p: CancelPayoutRunPayload) -> CommandResult:
    changes = ctx.changes
    require(ctx.states_revision_of(STATE, run_key(p.run_id)), ErrorCode.STALE_REVISION,
            "cancelling a payout run needs its expected revision")
    run = load_run(changes, p.run_id)
    require(run["status"] in ("prepared", "approved"), ErrorCode.INVALID_STATE, f"payout run {p.run_id} is {run['status']}")
    planned = run_payments(changes, run)
    for payment in planned:
        require(payment["state"] not in payments.IN_FLIGHT, ErrorCode.INVALID_STATE,
                f"payment {payment['payment_id']} has a signed attempt that is not resolved")
    cancellable = [payment for payment in planned if payment["state"] in payments.UNSIGNED]
    require(cancellable, ErrorCode.INVALID_STATE, f"payout run {p.run_id} has no unsigned payment left to cancel")
    end_run(ctx, run, "cancelled", p.reason, cancellable, note_digest=p.note_digest)
    require_conserved(changes)
    return {"run_id": p.run_id, "cancelled_payment_ids": [payment["payment_id"] for payment in cancellable]}


def _transfer(payment: Payment) -> RecordData:
    """What the transfer effect of ``payment`` carries: its ``TRANSFER_FIELDS``."""
    fields: Mapping[str, Any] = payment
    return {field: fields[field] for field in TRANSFER_FIELDS}


def require_within_cap(changes: Changes, payment: Payment) -> None:
    """Signing ``payment`` keeps what its run has signed or paid within the approval's cap, if it has one."""
    run = load_run(changes, payment["run_id"])
    approval = run["approval"]
    cap = approval.get("cap") if approval else None
    if cap is None:
        return
    committed = checked_sum(payments.amount(other) for other in run_payments(changes, run)
                            if other["state"] in (*payments.IN_FLIGHT, "confirmed"))
    require(committed + payments.amount(payment) <= parse_amount(cap), ErrorCode.APPROVAL_CAP_EXCEEDED,
            f"payout run {run['run_id']} has {committed} signed or paid; {payment['amount']} more exceeds its cap {cap}")


def end_run(ctx: RuleContext, run: PayoutRun, status: str, reason: str, cancellable: list[Payment], *,
            note_digest: str | None = None) -> None:
    """Cancel the run's unsigned payments and keep the run as a tombstone saying who ended it and why.

    A note's digest is written only when there is one, so runs ended without a note keep their exact bytes.
    """
    for payment in cancellable:
        payments.cancel(ctx.changes, payment, reason)
    noted = {"note_digest": note_digest} if note_digest else {}
    tombstone = {"ended_by": ctx.actor_id, "ended_at_ms": ctx.now_ms, "reason": reason, **noted}
    ctx.changes.put_state(run_key(run["run_id"]), {**run, "status": status, "tombstone": tombstone})
    ctx.changes.event("PayoutRunEnded", run_id=run["run_id"], status=status, reason=reason, **noted,
                      cancelled_payment_ids=[payment["payment_id"] for payment in cancellable])
