"""Payments, a batch at a time, one durable session each (docs/spec/durable-effect-sessions.md §2).

Every step either reads durable state or leaves some before the next step
may act on it, so a crash anywhere, a lost answer or a repeated message
converges instead of paying twice. A batch is several payments of one
payer worked together, so each step costs one round trip for all of them:

1. ``ClaimEffect`` takes an exclusive lease on each payment's effect, on
   the ledger's clock. A claim refused as stale (a retried or repeated
   message) reads the effect again and claims it at its current revision.
2. Each payment's last signed transaction (the signed-payment journal
   remembers it) is reused while it could still land. Only when the chain
   proves it failed or expired is a new transfer signed, at a free sequence
   of the payer's window, and journalled (one lock, one fsync for the
   batch) before anything else sees it.
3. The signed bytes are stored as evidence and ``RecordSignedAttempt``
   commits each attempt, in one round trip. Bytes the ledger has not
   accepted are never broadcast.
4. The bytes are broadcast in sequence order; ``CompleteEffect`` reports
   each ``submitted`` or ``unknown`` (the answer was lost).
5. The payer's follower (``payer_follow``) watches the chain and records
   every fate; the session asks for it and returns without waiting.

A payment worker acts as two ledger actors: its own (``dispatcher``,
``signer``) claims, signs and reports, and its observer's (``dispatcher``,
``observer``: ``PORTO_OBSERVER_ID``, ``PORTO_OBSERVER_TOKEN``) records what
the chain did with those payments. No credential holds both duties and the
ledger refuses a signer's observation of its own attempt, so settling a
payment always takes two credentials (docs/adr/0090).

Every command's ID is derived from the worker, the step and what the step is
about, so a retried step is the same command and the ledger runs it once.
``RecordSignedAttempt`` is named by the transaction, the claim it is
recorded under and the chain time it states: a retry that finds the attempt
recorded meanwhile is told the payment is in flight and reads it back. An
observation is named by the attempt, the outcome and the digest of the chain
evidence it asserts, so an identical repeat is a duplicate.

A payment the session cannot move now (a lease that has not lapsed, an
unreachable chain or console) is retried with the whole message; one for
which the payer's window has no room is handed back (``CompleteEffect``
``released``) and sent again shortly, to whichever worker is free then; one
the ledger or the chain contradicts is parked for an operator. The rest of
the batch goes on.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ledger_engine.open_json import RecordData, Unvalidated
from porto_console.effects.chain import Fate, Observation
from porto_console.effects.effect_worker import (
    EffectWorker, Poison, Transient, broadcast, claim_command, complete_command, evidence_of, look_up,
    may_still_land, note_completion, reading_of,
)
from porto_console.effects.ledger_api import (
    Answer, Command, DispatchDisabled, LedgerApi, LedgerRefused, LedgerUnreachable, Outcome, command_id_for,
)
from porto_console.effects.payment_journal import PaymentJournal, PaymentToSign, SignedPaymentRecord
from porto_console.effects.transactions import TransferTerms

log = logging.getLogger("porto.effects.payments")

OBSERVED_AS = {Fate.SUCCESS: "confirmed", Fate.FAILED: "failed", Fate.EXPIRED: "expired", Fate.PENDING: "submitted"}
USDC = "USDC"
OPEN = ("pending", "claimed")
WAIT_FOR_ANOTHER = ("CLAIM_EXPIRED", "CLAIM_HELD", "EXPIRED", "STALE_REVISION")  # refusals that pass
NOTHING_TO_SIGN = ("ALREADY_PAID", "RECONCILIATION_REQUIRED", "INVALID_STATE")
ROOM_AGAIN_SECS = 1.0  # a payment the payer's window had no room for is sent again this soon


@dataclass
class PaymentWorker(EffectWorker):
    """A payment worker: the payer's key, the signed-payment journal (a file or PostgreSQL: ``stores``) and the
    observer's credential (``observer``), through which every chain observation goes.

    ``ask_for_journal_check`` queues the journal check (``journal_reconcile``); ``ask_to_follow`` and
    ``ask_to_repair`` queue the payer's follower and repair (``payer_follow``, ``payer_repair``), the repair
    after ``delay_secs``; ``ask_to_send`` queues payment effects again after ``delay_secs``; ``park``
    quarantines one effect for an operator.
    """

    journal: PaymentJournal
    observer: LedgerApi
    ask_for_journal_check: Callable[[], object] = lambda: None
    ask_to_follow: Callable[[str], object] = lambda sender: None
    ask_to_repair: Callable[[str, float], object] = lambda sender, delay_secs: None
    ask_to_send: Callable[[list[RecordData], float], object] = lambda effects, delay_secs: None
    park: Callable[[str, Exception], object] = lambda effect_id, error: None

    @property
    def observer_id(self) -> str:
        actor, _ = self.config.require_observer()
        return actor

    def observation_of(self, command_type: str, payload: Unvalidated, *parts: str, **extra: Any) -> Command:
        """An observation command, named by the observer's actor, its type and ``parts``."""
        return Command(command_type, payload, command_id_for(self.observer_id, command_type, *parts), **extra)

    def observe_all(self, commands: Sequence[Command], evidence: Sequence[bytes] = ()) -> list[Answer]:
        """Store ``evidence`` and submit observation ``commands`` under the observer's credential."""
        return self.observer.submit_all(commands, evidence)


@dataclass(frozen=True, slots=True)
class Claimed:
    effect: RecordData  # as listed, at the revision the claim named
    revision: int  # the effect's revision once claimed: the one its report names
    expires_at_ms: int
    renewal: bool  # this worker held the lease already: its last run may have recorded the attempt

    @property
    def payment_id(self) -> str:
        return self.effect["payload"]["payment_id"]


@dataclass(frozen=True, slots=True)
class Signed:
    claim: Claimed
    record: SignedPaymentRecord
    fresh: bool


@dataclass
class BatchReport:
    """What became of each payment of a batch, and which must be tried again with the message."""

    moved: dict[str, str] = field(default_factory=dict)
    retry: dict[str, str] = field(default_factory=dict)
    no_room: list[Claimed] = field(default_factory=list)  # claimed, but the payer's window was full
    disabled: bool = False

    def note(self, effect_id: str, what: str) -> None:
        self.moved[effect_id] = what

    def again(self, effect_id: str, why: str) -> None:
        self.retry[effect_id] = why

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for what in self.moved.values():
            counts[what] = counts.get(what, 0) + 1
        return ", ".join(f"{count} {what}" for what, count in sorted(counts.items())) or "nothing to do"


def carry_out(worker: PaymentWorker, effects: Sequence[RecordData]) -> str:
    """Drive a batch of ``payment.transfer`` effects as far as they go now; returns what happened.

    Raises ``Transient`` after the rest of the batch has moved when some payment must be tried again.
    """
    report = BatchReport()
    claims = claim_all(worker, [effect for effect in effects if _pays_usdc(worker, effect)], report)
    if report.disabled:
        return "dispatch disabled"
    if claims:
        chain_time_ms, signed = sign_all(worker, claims, report)
        recorded = record_all(worker, signed, chain_time_ms, report)
        complete_all(worker, recorded, broadcast_all(worker, recorded), report)
    if report.no_room:
        worker.ask_to_send([claim.effect for claim in report.no_room], ROOM_AGAIN_SECS)
    worker.ask_to_follow(worker.signer.address)
    if report.retry:
        raise Transient(f"{len(report.retry)} payment(s) to try again: "
                        + "; ".join(f"{effect_id}: {why}" for effect_id, why in sorted(report.retry.items())))
    return report.summary()


def _pays_usdc(worker: PaymentWorker, effect: RecordData) -> bool:
    payload = effect["payload"]
    if payload["asset"] == USDC:
        return True
    worker.park(effect["effect_id"], Poison(f"payment {payload['payment_id']} is in {payload['asset']}; only USDC "
                                            "is paid on chain", effect["effect_id"]))
    return False


# 1. Claims.
def claim_all(worker: PaymentWorker, effects: Sequence[RecordData], report: BatchReport) -> list[Claimed]:
    """A lease on every effect that can be claimed now; one stale because the message is old is read again."""
    claims, stale = _claim(worker, effects, report)
    if stale:
        current = [worker.api.effect(effect["effect_id"]) for effect in stale]
        claims += _claim(worker, [effect for effect in current if effect["status"] in OPEN], report)[0]
    return claims


def _claim(worker: PaymentWorker, effects: Sequence[RecordData],
           report: BatchReport) -> tuple[list[Claimed], list[RecordData]]:
    expires_at_ms = worker.api.ledger_now_ms() + worker.config.claim_ttl_ms
    answers = worker.submit_all([claim_command(worker, effect, expires_at_ms) for effect in effects])
    claims, stale = [], []
    for effect, answer in zip(effects, answers):
        outcome = _outcome(worker, effect["effect_id"], answer, report)
        if outcome is None:
            continue
        if outcome.accepted:
            data = outcome.result["data"]
            claims.append(Claimed(effect, effect["revision"] + 1, data["expires_at_ms"], data["renewal"]))
        elif outcome.code == "STALE_REVISION":
            stale.append(effect)
        else:
            report.note(effect["effect_id"], f"not claimed: {outcome.code}")
    return claims, stale


# 2. Signing.
def sign_all(worker: PaymentWorker, claims: Sequence[Claimed], report: BatchReport) -> tuple[int, list[Signed]]:
    """Each claimed payment's transfer that can still land, or a new one; the chain time (ms) they were signed at."""
    chain_now_secs = worker.chain.ledger_state().timestamp_us // 1_000_000
    chain_sequence = worker.chain.sequence_number(worker.signer.address)
    to_sign = [PaymentToSign(claim.payment_id, claim.effect["effect_id"],
                             _signing(worker, claim.effect["payload"], chain_now_secs)) for claim in claims]
    signed = worker.journal.sign_payments(
        to_sign, worker_id=worker.worker_id, sender=worker.signer.address, chain_sequence=chain_sequence,
        chain_time_secs=chain_now_secs, reuse=lambda last: may_still_land(worker, last),
        window=worker.config.payer_window, now_ms=time.time_ns() // 1_000_000)
    kept: list[Signed] = []
    for claim, item in zip(claims, signed):
        if item is None:
            report.no_room.append(claim)
            continue
        record, fresh = item
        if fresh:
            log.info("signed %s for payment %s at sequence %s", record.transaction_hash, record.payment_id,
                     record.sequence_number)
        kept.append(Signed(claim, record, fresh))
    return chain_now_secs * 1000, kept


def _signing(worker: PaymentWorker, payload: RecordData, chain_now_secs: int) -> Callable[[int], Any]:
    config = worker.config

    def sign(sequence: int):
        return worker.signer.sign(TransferTerms(
            sender=worker.signer.address, sequence_number=sequence, asset_metadata=config.usdc_metadata,
            recipient=payload["payout_address"], amount=int(payload["amount"]),
            expiration_secs=chain_now_secs + config.transaction_ttl_secs, chain_id=config.chain_id,
            max_gas_amount=config.max_gas_amount, gas_unit_price=config.gas_unit_price))
    return sign


# 3. Recording.
def record_all(worker: PaymentWorker, signed: Sequence[Signed], chain_time_ms: int,
               report: BatchReport) -> list[Signed]:
    """Store the exact signed bytes, then record every attempt; the ones the ledger holds afterwards."""
    if not signed:
        return []
    commands = [attempt_command(worker, item.record, item.claim.expires_at_ms, chain_time_ms) for item in signed]
    answers = worker.submit_all(commands, [item.record.signed_bytes for item in signed])
    recorded = []
    for item, answer in zip(signed, answers):
        outcome = _outcome(worker, item.claim.effect["effect_id"], answer, report)
        if outcome is None:
            continue
        if outcome.accepted or (outcome.code == "RECONCILIATION_REQUIRED" and _recorded_before(worker, item)):
            recorded.append(item)
        else:
            _after_refused_attempt(worker, outcome, item, report)
    return recorded


def attempt_command(worker: PaymentWorker, record: SignedPaymentRecord, claim_expires_ms: int,
                    chain_time_ms: int) -> Command:
    """``RecordSignedAttempt`` of ``record``'s exact bytes under this worker's claim lasting to ``claim_expires_ms``,
    stating the chain's time ``chain_time_ms``."""
    payload = {**_attempt_payload(record, worker.worker_id), "chain_time_ms": chain_time_ms}
    return worker.command_of("RecordSignedAttempt", payload, record.transaction_hash, str(claim_expires_ms),
                             str(chain_time_ms), evidence_hashes=[record.signed_bytes_sha256])


def record_attempt(worker: PaymentWorker, record: SignedPaymentRecord, *, claim_expires_ms: int) -> Outcome:
    """One attempt recorded alone (its bytes stored first), stating the chain's time now."""
    chain_time_ms = worker.chain.ledger_state().timestamp_us // 1000
    command = attempt_command(worker, record, claim_expires_ms, chain_time_ms)
    answer = worker.submit_all([command], [record.signed_bytes])[0]
    if isinstance(answer, Exception):
        raise answer
    return answer


def _recorded_before(worker: PaymentWorker, item: Signed) -> bool:
    """A renewed claim's payment is in flight: with this very transaction, when this worker recorded it before."""
    return item.claim.renewal and ledger_attempt(worker, item.record) is not None


def _after_refused_attempt(worker: PaymentWorker, attempt: Outcome, item: Signed, report: BatchReport) -> None:
    """Nothing was broadcast. Some refusals pass, some mean the payment is settled, the rest need a person.

    ``NONCE_REUSED``: the ledger still holds the sequence for an attempt whose
    expiry it has not heard of; recording that expiry releases it, and the
    retry records the same bytes under a fresh claim.
    """
    record, effect_id = item.record, item.claim.effect["effect_id"]
    if attempt.code == "NONCE_REUSED":
        released = release_expired_at(worker, record.sender, record.sequence_number)
        report.again(effect_id, f"sequence {record.sequence_number} was held in the ledger; released {released} "
                                "expired attempt(s)")
    elif attempt.code in WAIT_FOR_ANOTHER:
        report.again(effect_id, f"attempt {record.transaction_hash} not recorded: {attempt.code}")
    elif attempt.code in NOTHING_TO_SIGN:
        report.note(effect_id, f"nothing to sign: {attempt.code}")
    else:
        worker.park(effect_id, Poison(f"attempt {record.transaction_hash} refused: {attempt.code} "
                                      f"{attempt.result.get('detail', '')}", effect_id))
        report.note(effect_id, "parked: the ledger refused its attempt")


def ledger_attempt(worker: PaymentWorker, record: SignedPaymentRecord) -> RecordData | None:
    """The ledger's attempt for ``record``'s transaction, whoever recorded it, or None."""
    attempts = worker.api.payment(record.payment_id)["attempts"]
    return next((attempt for attempt in attempts if attempt["transaction_hash"] == record.transaction_hash), None)


def _attempt_payload(record: SignedPaymentRecord, claimed_by: str) -> Unvalidated:
    return {**_transfer_payload(record), "claimed_by": claimed_by}


def _transfer_payload(record: SignedPaymentRecord) -> Unvalidated:
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


# 4. Broadcasting and reporting.
def broadcast_all(worker: PaymentWorker, recorded: Sequence[Signed]) -> dict[str, bool]:
    """Send every recorded transaction, lowest sequence first; which ones the chain acknowledged."""
    return {item.record.transaction_hash: broadcast(worker, item.record)
            for item in sorted(recorded, key=lambda item: item.record.sequence_number)}


def complete_all(worker: PaymentWorker, recorded: Sequence[Signed], sent: dict[str, bool],
                 report: BatchReport) -> None:
    """Report every broadcast, and hand back every claim the payer's window had no room for, in one round trip."""
    commands = [complete_command(worker, item.claim.effect["effect_id"], item.claim.revision,
                                 sent[item.record.transaction_hash], item.record) for item in recorded]
    handed_back = [release_command(worker, claim) for claim in report.no_room]
    answers = worker.submit_all(commands + handed_back)
    for item, answer in zip(recorded, answers):
        effect_id = item.claim.effect["effect_id"]
        note_completion(effect_id, answer)
        report.note(effect_id, "broadcast" if sent[item.record.transaction_hash] else "sent, unacknowledged")
    for claim in report.no_room:
        report.note(claim.effect["effect_id"], "handed back: the payer's window was full")


def release_command(worker: PaymentWorker, claim: Claimed) -> Command:
    """``CompleteEffect`` ``released``: the claim handed back untouched, so any worker may claim the effect at once."""
    effect_id = claim.effect["effect_id"]
    return worker.command_of("CompleteEffect", {"effect_id": effect_id, "outcome": "released"}, effect_id,
                             str(claim.revision), "released",
                             expected_revisions=[{"cf": "outbox", "key": effect_id, "revision": claim.revision}])


def _outcome(worker: PaymentWorker, effect_id: str, answer: Answer, report: BatchReport) -> Outcome | None:
    """The ledger's outcome for one payment's command; None when there is none (noted in ``report``)."""
    if isinstance(answer, Outcome):
        return answer
    if isinstance(answer, DispatchDisabled):
        report.disabled = True
        return None
    if isinstance(answer, LedgerUnreachable):
        report.again(effect_id, str(answer))
        return None
    worker.park(effect_id, answer)
    report.note(effect_id, f"parked: the internal API refused it ({answer.code})")
    return None


# Observations: what the follower, the journal check and reconcile record.
def observation_command(worker: PaymentWorker, record: SignedPaymentRecord, seen: Observation,
                        digest: str) -> Command:
    """``RecordTransferObservation`` of what the chain says of ``record``, its evidence stored under ``digest``."""
    reading = reading_of(seen, digest)
    outcome = OBSERVED_AS[seen.fate]
    payload = {"payment_id": record.payment_id, "attempt_id": attempt_id(record),
               "transaction_hash": record.transaction_hash, "outcome": outcome, **reading}
    return worker.observation_of("RecordTransferObservation", payload, attempt_id(record), outcome, digest,
                                 evidence_hashes=[digest])


def record_observations(worker: PaymentWorker,
                        seen: Sequence[tuple[SignedPaymentRecord, Observation]]) -> list[Answer]:
    """Store every observation's chain evidence and record each, in one round trip, as the observer."""
    evidence = [evidence_of(worker, observation) for _, observation in seen]
    commands = [observation_command(worker, record, observation, hashlib.sha256(data).hexdigest())
                for (record, observation), data in zip(seen, evidence)]
    return worker.observe_all(commands, evidence)


def record_observation(worker: PaymentWorker, record: SignedPaymentRecord, seen: Observation) -> Outcome:
    """Store the chain evidence with the ledger owner, then record what the chain says (one observation)."""
    answer = record_observations(worker, [(record, seen)])[0]
    if isinstance(answer, Exception):
        raise answer
    return answer


def release_expired_at(worker: PaymentWorker, sender: str, sequence: int) -> int:
    """Record the expiry of every journalled attempt at ``sender``/``sequence`` the chain proves expired; how many."""
    released = 0
    for held in worker.journal.at_sequence(sender, sequence):
        seen = look_up(worker, held)
        if seen.fate == Fate.EXPIRED and ledger_attempt(worker, held) is not None:
            released += record_observation(worker, held, seen).accepted
    return released


def record_landed(worker: PaymentWorker, record: SignedPaymentRecord, seen: Observation) -> Outcome:
    """A transfer the chain committed but the ledger never recorded: the attempt with its observation, at once.

    Reconcile's path after a restore: it needs no claim and no future expiry,
    because nothing is left to broadcast. The observer records it, naming the
    signer that journalled the bytes.
    """
    evidence = evidence_of(worker, seen)
    reading = reading_of(seen, hashlib.sha256(evidence).hexdigest())
    payload = {**_transfer_payload(record), **reading, "outcome": OBSERVED_AS[seen.fate],
               "signed_by": record.worker_id}
    command = worker.observation_of("RecordLandedAttempt", payload, attempt_id(record), payload["outcome"],
                                    reading["evidence_digest"],
                                    evidence_hashes=[record.signed_bytes_sha256, reading["evidence_digest"]])
    answer = worker.observe_all([command], [record.signed_bytes, evidence])[0]
    if isinstance(answer, Exception):
        raise answer
    return answer


def refused_observation(record: SignedPaymentRecord, seen: Observation, answer: Answer) -> Poison | None:
    """Why an observation the ledger did not take needs a person, or None when it took it."""
    if isinstance(answer, Outcome) and answer.accepted:
        return None
    code = answer.code if isinstance(answer, (Outcome, LedgerRefused)) else str(answer)
    return Poison(f"observation {OBSERVED_AS[seen.fate]} of {record.transaction_hash} rejected: {code}",
                  record.effect_id)

