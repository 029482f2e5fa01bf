"""Payout runs, payments, attempts, recipients, batches, statements and outbox effects
(docs/records/money-payouts.md)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from ledger_engine.domain.schema.money_allocation import Created
from ledger_engine.keys import key
from ledger_engine.open_json import RecordData

PaymentState = Literal["prepared", "approved", "held", "signed", "submitted", "uncertain", "failed", "confirmed",
                       "cancelled"]
BatchState = Literal["preparing", "frozen", "submitted", "uncertain", "failed", "confirmed", "abandoned"]
EffectStatus = Literal["pending", "claimed", "done", "cancelled"]

RUN_PREFIX = "payment_run/"
PAYMENT_PREFIX = "payment/"
ATTEMPT_PREFIX = "payment_attempt/"
BATCH_PREFIX = "batch/"
STATEMENT_PREFIX = "statement/"


class PlannedPayment(TypedDict):
    payment_id: str
    effect_id: str
    recipient_id: str
    recipient_version: int
    amount: str
    line_ids: list[str]
    payout_address: str


class FrozenRun(TypedDict):
    run_id: str
    asset: str
    payments: list[PlannedPayment]
    total: str


class NewPayment(PlannedPayment):
    """A planned payment as its run creates it (``payments.create_payment`` writes the rest of its ``Payment``)."""

    run_id: str
    asset: str
    correlation_id: str


class RunApproval(TypedDict):
    approved_by: str
    approved_at_ms: int
    statement_ids: list[str]
    cap: str | None  # None: the approval set no cap


class RunTombstone(TypedDict):
    ended_by: str
    ended_at_ms: int
    reason: str


class PayoutRun(TypedDict):
    run_id: str
    status: str
    run_hash: str
    frozen: FrozenRun
    prepared_by: str
    prepared_at_ms: int
    approval: RunApproval | None
    tombstone: RunTombstone | None
    supersedes: RecordData | None
    correlation_id: str
    created: Created


class Payment(TypedDict):
    payment_id: str
    run_id: str
    effect_id: str
    recipient_id: str
    recipient_version: int
    payout_address: str
    asset: str
    amount: str
    line_ids: list[str]
    state: PaymentState
    held_from: PaymentState | None
    held_for: dict[str, str] | None
    attempt_ids: list[str]
    paid_attempt_id: str | None
    cancel_reason: str | None
    superseded_by: str | None
    correlation_id: str
    created: Created


class PaymentAttempt(TypedDict):
    attempt_id: str
    payment_id: str
    effect_id: str
    number: int
    claimed_by: str | None
    sender_address: str
    sender_sequence: int
    signed_bytes_ref: str
    signed_bytes_hash: str
    transaction_hash: str
    expires_at_ms: int
    signed_by: str
    signed_at_ms: int
    reconciled: bool
    outcome: str
    ledger_version: int | None
    observed_at_ms: int | None
    correlation_id: str
    created: Created


class Recipient(TypedDict):
    recipient_id: str
    payout_address: str
    version: int


class RecipientUpdate(TypedDict):
    update_id: str
    recipient_id: str
    status: Literal["pending", "approved", "declined"]
    from_version: int
    version: int
    old_address: str
    payout_address: str
    evidence_digest: str
    requested_by: str
    requested_at_ms: int
    decision: RecordData | None


class Artifact(TypedDict):
    ref: str
    hash: str
    count: int
    frozen_by: str
    frozen_at_ms: int
    frozen_sequence: int
    statement_root: NotRequired[str]  # a statement-index batch's: the root of its statements' tree


class Batch(TypedDict):
    batch_id: str
    kind: Literal["allocation", "statement_index", "correction"]
    window_start_ms: int
    window_end_ms: int
    parent_batch_id: str | None
    state: BatchState
    prepared_by: str
    prepared_at_ms: int
    artifact: Artifact | None
    anchor_effect_id: str | None
    transaction_hash: str | None
    ledger_version: int | None
    abandoned: RecordData | None


class Statement(TypedDict):
    statement_id: str
    recipient_id: str
    accounting_batch_id: str
    artifact_hash: str
    public_proof_id: str
    index_batch_id: str
    correlation_id: str
    created: Created


class Claim(TypedDict):
    worker_id: str
    claimed_at_ms: int
    expires_at_ms: int


class Effect(TypedDict):
    """An outbox record: an effect intent, its claim and its result."""

    effect_id: str
    kind: str
    payload: RecordData
    status: EffectStatus
    command_id: str
    created_sequence: int
    claim: Claim | None
    attempts: int
    result: RecordData | None


def run_key(run_id: str) -> str:
    return key("payment_run", run_id)


def payment_key(payment_id: str) -> str:
    return key("payment", payment_id)


def recipient_link_key(recipient_id: str, payment_id: str) -> str:
    return key("recipient_payment", recipient_id, payment_id)


def attempt_key(attempt_id: str) -> str:
    return key("payment_attempt", attempt_id)


def recipient_key(recipient_id: str) -> str:
    return key("recipient", recipient_id)


def update_key(recipient_id: str, update_id: str) -> str:
    return key("recipient_update", recipient_id, update_id)


def batch_key(batch_id: str) -> str:
    return key("batch", batch_id)


def statement_key(statement_id: str) -> str:
    return key("statement", statement_id)
