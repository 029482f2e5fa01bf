"""One payment, one durable session (docs/spec/durable-effect-sessions.md §2): claim, sign, record, broadcast, observe.

Every step either reads durable state or leaves some before the next step
may act on it, so a crash anywhere, a lost answer or a repeated message
converges instead of paying twice:

1. ``ClaimEffect`` takes an exclusive lease on the payment's effect.
2. The last transaction this payment signed (the signed-payment journal
   remembers it) is reused while it could still land. Only when the chain
   proves it failed or expired is a new transfer signed, at a free sequence,
   and journalled (fsynced) before anything else sees it.
3. ``RecordSignedAttempt`` commits the attempt. Bytes the ledger has not
   accepted are never broadcast.
4. The bytes are broadcast; ``CompleteEffect`` reports ``submitted`` or
   ``unknown`` (the answer was lost).
5. ``follow`` watches the transaction by hash. Recorded bytes the chain does
   not know are broadcast again: the same bytes can land only once. A
   confirmed, failed or expired fate becomes ``RecordTransferObservation``
   with the chain evidence stored first; failed or expired reopens the
   effect for a new attempt.

Every command's ID is derived from the worker, the step and what the step is
about, so a retried step is the same command and the ledger runs it once.
``RecordSignedAttempt`` is named by the transaction and the claim it is
recorded under: a retry under the same claim is a duplicate, and the same
journalled bytes can still be recorded under a later claim after a
refusal that passes (the ledger holds each transaction hash once). An
observation is named by the attempt, the outcome and the digest of the
chain evidence it asserts, so an identical repeat is a duplicate.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable

from porto_console.effects.chain import Fate, Observation
from porto_console.effects.effect_worker import (
    EffectWorker, Poison, Transient, broadcast, chain_reading, claim, complete, look_up, may_still_land, watch,
)
from porto_console.effects.ledger_api import Outcome
from porto_console.effects.payment_journal import PaymentJournal, SignedPaymentRecord
from porto_console.effects.transactions import TransferTerms

log = logging.getLogger("porto.effects.payments")

OBSERVED_AS = {Fate.SUCCESS: "confirmed", Fate.FAILED: "failed", Fate.EXPIRED: "expired", Fate.PENDING: "submitted"}
USDC = "USDC"


@dataclass
class PaymentWorker(EffectWorker):
    """A payment worker: the payer's key and the signed-payment journal (a file or PostgreSQL: ``stores``).

    ``ask_for_journal_check`` queues the journal check (``journal_reconcile``); a session that meets a
    transaction the ledger never recorded calls it rather than wait for a sweep.
    """

    journal: PaymentJournal
    ask_for_journal_check: Callable[[], object] = lambda: None


def carry_out(worker: PaymentWorker, effect: dict[str, Any]) -> str:
    """Drive one claimable ``payment.transfer`` effect as far as it goes now; returns what happened."""
    payload = effect["payload"]
    if payload["asset"] != USDC:
        raise Poison(f"payment {payload['payment_id']} is in {payload['asset']}; only USDC is paid on chain")
    claimed = claim(worker, effect)
    if not claimed.accepted:
        return _follow_last(worker, payload["payment_id"], f"not claimed: {claimed.code}")
    record = _signed_transfer(worker, effect)
    if ledger_attempt(worker, record) is None:
        attempt = record_attempt(worker, record, claim_expires_ms=claimed.result["data"]["expires_at_ms"])
        if not attempt.accepted:
            return _after_refused_attempt(worker, attempt, record)
    complete(worker, effect["effect_id"], effect["revision"] + 1, broadcast(worker, record), record)
    return follow(worker, record)


def follow(worker: PaymentWorker, record: SignedPaymentRecord, *, window_secs: int | None = None) -> str:
    """Watch one recorded transaction until the chain settles its fate, then record it.

    Raises ``NotYet`` when the observation window closes first. A
    transaction the ledger has not recorded is not watched: it is never
    broadcast, and the journal check (``journal_reconcile``) gets it
    recorded or proves it can never land.
    """
    if not _is_recorded(worker, record):
        worker.ask_for_journal_check()
        return f"transaction {record.transaction_hash} is not recorded: left to the journal check"
    seen = watch(worker, record, may_rebroadcast=lambda: True, window_secs=window_secs)
    return _settle(record, seen, record_observation(worker, record, seen))


def _follow_last(worker: PaymentWorker, payment_id: str, why: str) -> str:
    """Someone else holds the effect, or it moved on: settle the payment's last transaction if it has one.

    This is how an attempt left behind by a worker that died after recording
    or broadcasting it gets observed; observations are idempotent.
    """
    signed = worker.journal.for_payment(payment_id)
    return f"{why}; {follow(worker, signed[-1])}" if signed else why


def _signed_transfer(worker: PaymentWorker, effect: dict[str, Any]) -> SignedPaymentRecord:
    """The payment's last signed transaction while it could still land, else a new one."""
    payload, config = effect["payload"], worker.config
    chain_now_secs = worker.chain.ledger_state().timestamp_us // 1_000_000

    def sign(sequence: int):
        return worker.signer.sign(TransferTerms(
            sender=worker.signer.address, sequence_number=sequence, asset_metadata=config.usdc_metadata,
            recipient=payload["payout_address"], amount=int(payload["amount"]),
            expiration_secs=chain_now_secs + config.transaction_ttl_secs, chain_id=config.chain_id,
            max_gas_amount=config.max_gas_amount, gas_unit_price=config.gas_unit_price))

    record, fresh = worker.journal.sign_next(
        payment_id=payload["payment_id"], effect_id=effect["effect_id"], worker_id=worker.worker_id,
        sender=worker.signer.address, chain_sequence=worker.chain.sequence_number(worker.signer.address),
        chain_time_secs=chain_now_secs, reuse=lambda last: may_still_land(worker, last), sign=sign,
        now_ms=time.time_ns() // 1_000_000)
    if fresh:
        log.info("signed %s for payment %s at sequence %s", record.transaction_hash, record.payment_id,
                 record.sequence_number)
    return record


def record_attempt(worker: PaymentWorker, record: SignedPaymentRecord, *, claim_expires_ms: int) -> Outcome:
    """The exact signed bytes go to the ledger owner's evidence store first, then the attempt cites them.

    Recorded under this worker's claim that lasts until ``claim_expires_ms``.
    """
    worker.api.store_evidence(record.signed_bytes)
    return worker.command("RecordSignedAttempt", _attempt_payload(record, worker.worker_id), record.transaction_hash,
                          str(claim_expires_ms), evidence_hashes=[record.signed_bytes_sha256])


def ledger_attempt(worker: PaymentWorker, record: SignedPaymentRecord) -> dict[str, Any] | None:
    """The ledger's attempt for ``record``'s transaction, whoever recorded it, or None."""
    attempts = worker.api.payment(record.payment_id)["attempts"]
    return next((attempt for attempt in attempts if attempt["transaction_hash"] == record.transaction_hash), None)


def _attempt_payload(record: SignedPaymentRecord, claimed_by: str) -> dict[str, Any]:
    return {**_transfer_payload(record), "claimed_by": claimed_by}


def _transfer_payload(record: SignedPaymentRecord) -> dict[str, Any]:
    """What the signed bytes say, as the ledger records an attempt."""
    return {
        "payment_id": record.payment_id,
        "attempt_id": attempt_id(record),
        "payout_address": record.recipient,
        "amount": record.amount,
        "sender_address": record.sender,
        "sender_sequence": record.sequence_number,
        "signed_bytes_ref": f"evidence:{record.signed_bytes_sha256}",
        "signed_bytes_hash": record.signed_bytes_sha256,
        "transaction_hash": record.transaction_hash,
        "expires_at_ms": record.expiration_secs * 1000,
    }


def attempt_id(record: SignedPaymentRecord) -> str:
    return f"tx-{record.transaction_hash[2:]}"


def _is_recorded(worker: PaymentWorker, record: SignedPaymentRecord) -> bool:
    """Only bytes the ledger accepted may be broadcast; others wait to be recorded, or for their expiry."""
    return ledger_attempt(worker, record) is not None


def _after_refused_attempt(worker: PaymentWorker, attempt: Outcome, record: SignedPaymentRecord) -> str:
    """Nothing was broadcast. Some refusals pass, some mean the payment is settled, the rest need a person.

    ``NONCE_REUSED``: the ledger still holds the sequence for an attempt whose
    expiry it has not heard of; recording that expiry releases it, and the
    retry records the same bytes under a fresh claim.
    """
    if attempt.code == "NONCE_REUSED":
        released = release_expired_at(worker, record.sender, record.sequence_number)
        raise Transient(f"sequence {record.sequence_number} was held in the ledger; "
                        f"released {released} expired attempt(s)")
    if attempt.code in ("CLAIM_EXPIRED", "CLAIM_HELD", "EXPIRED", "STALE_REVISION"):
        raise Transient(f"attempt {record.transaction_hash} not recorded: {attempt.code}")
    if attempt.code in ("ALREADY_PAID", "RECONCILIATION_REQUIRED", "INVALID_STATE"):
        return f"nothing to sign: {attempt.code}"
    raise Poison(f"attempt {record.transaction_hash} refused: {attempt.code} {attempt.result.get('detail', '')}",
                 record.effect_id)


def release_expired_at(worker: PaymentWorker, sender: str, sequence: int) -> int:
    """Record the expiry of every journalled attempt at ``sender``/``sequence`` the chain proves expired; how many."""
    released = 0
    for held in worker.journal.at_sequence(sender, sequence):
        seen = look_up(worker, held)
        if seen.fate == Fate.EXPIRED and ledger_attempt(worker, held) is not None:
            released += record_observation(worker, held, seen).accepted
    return released


def record_observation(worker: PaymentWorker, record: SignedPaymentRecord, seen: Observation) -> Outcome:
    """Store the chain evidence with the ledger owner, then record what the chain says.

    Observations are idempotent in the ledger, so each chain reading is its
    own command.
    """
    reading = chain_reading(worker, seen)
    outcome = OBSERVED_AS[seen.fate]
    payload = {"payment_id": record.payment_id, "attempt_id": attempt_id(record),
               "transaction_hash": record.transaction_hash, "outcome": outcome, **reading}
    return worker.command("RecordTransferObservation", payload, attempt_id(record), outcome,
                          reading["evidence_digest"], evidence_hashes=[reading["evidence_digest"]])


def record_landed(worker: PaymentWorker, record: SignedPaymentRecord, seen: Observation) -> Outcome:
    """A transfer the chain committed but the ledger never recorded: the attempt with its observation, at once.

    Reconcile's path after a restore: it needs no claim and no future expiry,
    because nothing is left to broadcast.
    """
    worker.api.store_evidence(record.signed_bytes)
    reading = chain_reading(worker, seen)
    payload = {**_transfer_payload(record), **reading, "outcome": OBSERVED_AS[seen.fate]}
    return worker.command("RecordLandedAttempt", payload, attempt_id(record), payload["outcome"],
                          reading["evidence_digest"],
                          evidence_hashes=[record.signed_bytes_sha256, reading["evidence_digest"]])


def _settle(record: SignedPaymentRecord, seen: Observation, observed: Outcome) -> str:
    outcome = OBSERVED_AS[seen.fate]
    if observed.accepted:
        return f"observed {outcome}"
    raise Poison(f"observation {outcome} of {record.transaction_hash} rejected: {observed.code}", record.effect_id)
