"""One payment, one durable session (seed 004): claim, sign, record, broadcast, observe.

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
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from ledger_engine.canonical import canonical_bytes
from porto_console.effects.chain import ChainClient, ChainUncertain, Fate, Observation, SubmitRefused, observe
from porto_console.effects.config import EffectsConfig
from porto_console.effects.ledger_api import LedgerApi, Outcome, command_id_for
from porto_console.effects.payment_journal import SignedPaymentJournal, SignedPaymentRecord
from porto_console.effects.signer import Signer
from porto_console.effects.transactions import TransferTerms

log = logging.getLogger("porto.effects.payments")

SETTLED = (Fate.SUCCESS, Fate.FAILED, Fate.EXPIRED)
OBSERVED_AS = {Fate.SUCCESS: "confirmed", Fate.FAILED: "failed", Fate.EXPIRED: "expired", Fate.PENDING: "submitted"}
POLL_SECS = 0.05
MAX_POLL_SECS = 1.0
USDC = "USDC"


class Poison(Exception):
    """The ledger or the chain contradicts this payment's records: an operator must look."""


class NotYet(Exception):
    """The payment cannot move now (a transaction may still land, a lease is held); try again later.

    ``transaction_hash`` names the transaction to keep following, when there is one.
    """

    def __init__(self, detail: str, transaction_hash: str | None = None) -> None:
        super().__init__(detail, transaction_hash)
        self.transaction_hash = transaction_hash


@dataclass
class PaymentWorker:
    """The collaborators of one worker process."""

    config: EffectsConfig
    api: LedgerApi
    chain: ChainClient
    signer: Signer
    journal: SignedPaymentJournal

    @property
    def worker_id(self) -> str:
        return self.config.worker_id

    def command(self, command_type: str, payload: dict[str, Any], *parts: str, **extra: Any) -> Outcome:
        command_id = command_id_for(self.worker_id, command_type, *parts)
        return self.api.submit(command_type, payload, command_id=command_id, **extra)


def carry_out(worker: PaymentWorker, effect: dict[str, Any]) -> str:
    """Drive one claimable ``payment.transfer`` effect as far as it goes now; returns what happened."""
    payload = effect["payload"]
    if payload["asset"] != USDC:
        raise Poison(f"payment {payload['payment_id']} is in {payload['asset']}; only USDC is paid on chain")
    claimed = claim(worker, effect)
    if not claimed.accepted:
        return _follow_last(worker, payload["payment_id"], f"not claimed: {claimed.code}")
    record = _signed_transfer(worker, effect)
    attempt = record_attempt(worker, record, claimed_by=worker.worker_id)
    if not attempt.accepted:
        return _after_refused_attempt(attempt, record)
    _broadcast_and_report(worker, effect["effect_id"], effect["revision"] + 1, record)
    return follow(worker, record)


def follow(worker: PaymentWorker, record: SignedPaymentRecord) -> str:
    """Watch one signed transaction until the chain settles its fate, then record it.

    Raises ``NotYet`` when the observation window closes first.
    """
    deadline = time.monotonic() + worker.config.observe_window_secs
    delay = POLL_SECS
    while True:
        seen = observe(worker.chain, record.transaction_hash, record.expiration_secs)
        if seen.fate in SETTLED:
            return _settle(record, seen, record_observation(worker, record, seen))
        if seen.fate == Fate.UNKNOWN and _is_recorded(worker, record):
            _broadcast(worker, record)
        if time.monotonic() >= deadline:
            raise NotYet(f"{seen.fate} after {worker.config.observe_window_secs}s", record.transaction_hash)
        time.sleep(delay)
        delay = min(delay * 2, MAX_POLL_SECS)


def _follow_last(worker: PaymentWorker, payment_id: str, why: str) -> str:
    """Someone else holds the effect, or it moved on: settle the payment's last transaction if it has one.

    This is how an attempt left behind by a worker that died after recording
    or broadcasting it gets observed; observations are idempotent.
    """
    signed = worker.journal.for_payment(payment_id)
    return f"{why}; {follow(worker, signed[-1])}" if signed else why


def claim(worker: PaymentWorker, effect: dict[str, Any]) -> Outcome:
    """A fresh lease on the effect at the revision the message names.

    Each delivery asks for its own lease, so a duplicate delivery after the
    first claim finds the revision moved on (STALE_REVISION) and stands back.
    """
    expires_at_ms = time.time_ns() // 1_000_000 + worker.config.claim_ttl_ms
    return worker.command(
        "ClaimEffect", {"effect_id": effect["effect_id"], "expires_at_ms": expires_at_ms},
        effect["effect_id"], str(effect["revision"]), str(expires_at_ms),
        expected_revisions=[{"cf": "outbox", "key": effect["effect_id"], "revision": effect["revision"]}])


def _signed_transfer(worker: PaymentWorker, effect: dict[str, Any]) -> SignedPaymentRecord:
    """The payment's last signed transaction while it could still land, else a new one."""
    payload, config = effect["payload"], worker.config
    chain_now_secs = worker.chain.ledger_state().timestamp_us // 1_000_000

    def could_still_land(last: SignedPaymentRecord) -> bool:
        return observe(worker.chain, last.transaction_hash, last.expiration_secs).fate not in (Fate.FAILED, Fate.EXPIRED)

    def sign(sequence: int):
        return worker.signer.sign(TransferTerms(
            sender=worker.signer.address, sequence_number=sequence, asset_metadata=config.usdc_metadata,
            recipient=payload["payout_address"], amount=int(payload["amount"]),
            expiration_secs=chain_now_secs + config.transaction_ttl_secs, chain_id=config.chain_id,
            max_gas_amount=config.max_gas_amount, gas_unit_price=config.gas_unit_price))

    record, fresh = worker.journal.sign_next(
        payment_id=payload["payment_id"], effect_id=effect["effect_id"], worker_id=worker.worker_id,
        sender=worker.signer.address, chain_sequence=worker.chain.sequence_number(worker.signer.address),
        chain_time_secs=chain_now_secs, reuse=could_still_land, sign=sign, now_ms=time.time_ns() // 1_000_000)
    if fresh:
        log.info("signed %s for payment %s at sequence %s", record.transaction_hash, record.payment_id,
                 record.sequence_number)
    return record


def record_attempt(worker: PaymentWorker, record: SignedPaymentRecord, *, claimed_by: str) -> Outcome:
    """The exact signed bytes go to the ledger owner's evidence store first, then the attempt cites them."""
    worker.api.store_evidence(record.signed_bytes)
    return worker.command("RecordSignedAttempt", _attempt_payload(record, claimed_by), record.transaction_hash,
                          evidence_hashes=[record.signed_bytes_sha256])


def recorded_attempt(worker: PaymentWorker, record: SignedPaymentRecord) -> Outcome | None:
    """The ledger's outcome of this worker's ``RecordSignedAttempt`` for ``record``, if it journalled one.

    The internal API resolves a worker's own commands only, so an attempt
    another worker recorded reads as None here.
    """
    if record.worker_id != worker.worker_id:
        return None
    return worker.api.resolve(command_id_for(worker.worker_id, "RecordSignedAttempt", record.transaction_hash))


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
    """Only bytes the ledger accepted may be broadcast; others are left to their expiry."""
    outcome = recorded_attempt(worker, record)
    return outcome is not None and outcome.accepted


def _after_refused_attempt(attempt: Outcome, record: SignedPaymentRecord) -> str:
    """Nothing was broadcast. Some refusals mean wait, some mean the payment is settled, some need a person."""
    if attempt.code in ("CLAIM_EXPIRED", "CLAIM_HELD", "EXPIRED"):
        raise NotYet(f"attempt {record.transaction_hash} not recorded: {attempt.code}")
    if attempt.code in ("ALREADY_PAID", "RECONCILIATION_REQUIRED", "INVALID_STATE"):
        return f"nothing to sign: {attempt.code}"
    raise Poison(f"attempt {record.transaction_hash} refused: {attempt.code} {attempt.result.get('detail', '')}")


def _broadcast_and_report(worker: PaymentWorker, effect_id: str, revision: int, record: SignedPaymentRecord) -> None:
    outcome = "submitted" if _broadcast(worker, record) else "unknown"
    report = worker.command(
        "CompleteEffect", {"effect_id": effect_id, "outcome": outcome, "transaction_hash": record.transaction_hash},
        effect_id, str(revision), expected_revisions=[{"cf": "outbox", "key": effect_id, "revision": revision}])
    if not report.accepted:
        log.info("report on %s not recorded (%s); the observation will settle it", effect_id, report.code)


def _broadcast(worker: PaymentWorker, record: SignedPaymentRecord) -> bool:
    """Send the recorded bytes; True when the chain acknowledged them."""
    try:
        worker.chain.submit(record.signed_bytes)
        return True
    except (ChainUncertain, SubmitRefused) as error:
        log.info("broadcast of %s unacknowledged: %s", record.transaction_hash, error)
        return False


def record_observation(worker: PaymentWorker, record: SignedPaymentRecord, seen: Observation) -> Outcome:
    """Store the chain evidence with the ledger owner, then record what the chain says.

    Observations are idempotent in the ledger, so each chain reading is its
    own command.
    """
    reading = _chain_reading(worker, seen)
    outcome = OBSERVED_AS[seen.fate]
    payload = {"payment_id": record.payment_id, "attempt_id": attempt_id(record),
               "transaction_hash": record.transaction_hash, "outcome": outcome, **reading}
    return worker.command("RecordTransferObservation", payload, record.transaction_hash, outcome,
                          str(seen.ledger.version), evidence_hashes=[reading["evidence_digest"]])


def record_landed(worker: PaymentWorker, record: SignedPaymentRecord, seen: Observation) -> Outcome:
    """A transfer the chain committed but the ledger never recorded: the attempt with its observation, at once.

    Reconcile's path after a restore: it needs no claim and no future expiry,
    because nothing is left to broadcast.
    """
    worker.api.store_evidence(record.signed_bytes)
    reading = _chain_reading(worker, seen)
    payload = {**_transfer_payload(record), **reading, "outcome": OBSERVED_AS[seen.fate]}
    return worker.command("RecordLandedAttempt", payload, record.transaction_hash, str(seen.ledger.version),
                          evidence_hashes=[record.signed_bytes_sha256, reading["evidence_digest"]])


def _chain_reading(worker: PaymentWorker, seen: Observation) -> dict[str, Any]:
    """The chain evidence, stored with the ledger owner first, and where and when the chain was read."""
    digest = worker.api.store_evidence(canonical_bytes(seen.evidence(worker.chain.label)))
    return {"ledger_version": seen.ledger_version, "chain_time_ms": seen.ledger.timestamp_us // 1000,
            "evidence_digest": digest}


def _settle(record: SignedPaymentRecord, seen: Observation, observed: Outcome) -> str:
    outcome = OBSERVED_AS[seen.fate]
    if observed.accepted:
        return f"observed {outcome}"
    if observed.code == "NOT_FOUND" and seen.fate in (Fate.FAILED, Fate.EXPIRED):
        return f"unrecorded transaction {outcome}: nothing was paid"
    raise Poison(f"observation {outcome} of {record.transaction_hash} rejected: {observed.code}")
