"""One frozen batch, one durable session: claim, sign, persist, broadcast, observe its commitment.

The committer anchors a batch's artifact hash and item count on chain, with
the ledger journal's Merkle root and size read when it signs, as
``<committer>::commitments::anchor(hash, count, journal_root, journal_size)``, signed with its own key
(``PORTO_COMMITTER_KEY``), never the payer's and never from the ledger. The
same discipline as a payment, so a crash, a lost answer or a repeated message
anchors a batch once:

1. ``ClaimEffect`` takes an exclusive lease on the batch's ``batch.anchor``
   effect (the ``committer`` role). Refused: the batch's last commitment is
   followed instead, which settles what a dead worker left.
2. The batch's last commitment in the signed-commitment journal is reused
   while it could still land; only when the chain proves it failed or
   expired is a new one signed, at a free sequence, and journalled (fsynced).
3. The exact signed bytes are stored with the ledger owner's evidence store
   before they are broadcast, every time they are.
4. The bytes are broadcast; ``CompleteEffect`` reports ``submitted`` or
   ``unknown`` (the answer was lost), citing the bytes.
5. ``follow`` watches the commitment by hash (rebroadcasting bytes the chain
   does not know) and records its fate with ``RecordCommitmentObservation``
   (the ``observer`` role), the chain evidence stored first: confirmed
   confirms the batch; failed, or expired without landing, is ``failed``,
   which reopens the anchor effect for a new commitment with the same payload.
"""

from __future__ import annotations

import logging
import time

from ledger_engine.open_json import RecordData
from porto_console.effects.chain import Fate, Observation
from porto_console.effects.commitment_journal import SignedCommitmentJournal, SignedCommitmentRecord
from porto_console.effects.effect_worker import (
    EffectWorker, Poison, broadcast, chain_reading, claim, complete, may_still_land, watch,
)
from porto_console.effects.ledger_api import Outcome
from porto_console.effects.transactions import CommitmentTerms

log = logging.getLogger("porto.effects.commitments")

# The ledger knows a commitment confirmed or failed; one that expired unlanded can never anchor, so it failed too.
OBSERVED_AS = {Fate.SUCCESS: "confirmed", Fate.FAILED: "failed", Fate.EXPIRED: "failed"}


class CommitmentWorker(EffectWorker):
    """A committer: the committer's key and the signed-commitment journal."""

    journal: SignedCommitmentJournal


def carry_out(worker: CommitmentWorker, effect: RecordData) -> str:
    """Drive one claimable ``batch.anchor`` effect as far as it goes now; returns what happened."""
    claimed = claim(worker, effect)
    if not claimed.accepted:
        return _follow_last(worker, effect["payload"]["batch_id"], f"not claimed: {claimed.code}")
    record = _signed_commitment(worker, effect)
    _persist(worker, record)
    complete(worker, effect["effect_id"], effect["revision"] + 1, broadcast(worker, record), record,
             evidence_hashes=[record.signed_bytes_sha256])
    return _watch_and_record(worker, record)


def follow(worker: CommitmentWorker, record: SignedCommitmentRecord, *, window_secs: int | None = None) -> str:
    """Watch one journalled commitment until the chain settles it, then record it; ``NotYet`` if it does not."""
    _persist(worker, record)
    return _watch_and_record(worker, record, window_secs)


def _follow_last(worker: CommitmentWorker, batch_id: str, why: str) -> str:
    """Someone else holds the effect, or it moved on: settle the batch's last commitment if it has one."""
    signed = worker.journal.for_subject(batch_id)
    return f"{why}; {follow(worker, signed[-1])}" if signed else why


def _signed_commitment(worker: CommitmentWorker, effect: RecordData) -> SignedCommitmentRecord:
    """The batch's last signed commitment while it could still land, else a new one."""
    payload, config = effect["payload"], worker.config
    chain_now_secs = worker.chain.ledger_state().timestamp_us // 1_000_000
    now_ms = time.time_ns() // 1_000_000

    def sign(sequence: int) -> SignedCommitmentRecord:
        journal = worker.api.journal_tree()
        commitment = worker.signer.sign(CommitmentTerms(
            sender=worker.signer.address, sequence_number=sequence, artifact_hash=payload["artifact_hash"],
            count=payload["count"], journal_size=journal["size"], journal_root=journal["root"],
            expiration_secs=chain_now_secs + config.transaction_ttl_secs,
            chain_id=config.chain_id, max_gas_amount=config.max_gas_amount, gas_unit_price=config.gas_unit_price))
        return SignedCommitmentRecord.of(payload["batch_id"], effect["effect_id"], worker.worker_id, commitment, now_ms)

    record, fresh = worker.journal.sign_next_for(
        payload["batch_id"], sender=worker.signer.address,
        chain_sequence=worker.chain.sequence_number(worker.signer.address), chain_time_secs=chain_now_secs,
        reuse=lambda last: may_still_land(worker, last), sign=sign)
    if fresh:
        log.info("signed commitment %s for batch %s at sequence %s", record.transaction_hash, record.batch_id,
                 record.sequence_number)
    return record


def _persist(worker: CommitmentWorker, record: SignedCommitmentRecord) -> None:
    """The exact bytes go to the ledger owner's evidence store before they may be broadcast (idempotent)."""
    worker.api.store_evidence(record.signed_bytes)


def _watch_and_record(worker: CommitmentWorker, record: SignedCommitmentRecord,
                      window_secs: int | None = None) -> str:
    seen = watch(worker, record, may_rebroadcast=lambda: True, window_secs=window_secs)
    return _settle(record, seen, record_observation(worker, record, seen))


def record_observation(worker: CommitmentWorker, record: SignedCommitmentRecord, seen: Observation) -> Outcome:
    """Store the chain evidence with the ledger owner, then record the commitment's fate for its batch."""
    reading = chain_reading(worker, seen)
    outcome = OBSERVED_AS[seen.fate]
    payload = {"batch_id": record.batch_id, "transaction_hash": record.transaction_hash,
               "artifact_hash": record.artifact_hash, "outcome": outcome,
               "ledger_version": reading["ledger_version"], "evidence_digest": reading["evidence_digest"]}
    if record.journal_root is not None:
        payload["journal_tree"] = {"size": record.journal_size, "root": record.journal_root}
    return worker.command("RecordCommitmentObservation", payload, record.transaction_hash, outcome,
                          reading["evidence_digest"], evidence_hashes=[reading["evidence_digest"]])


def _settle(record: SignedCommitmentRecord, seen: Observation, observed: Outcome) -> str:
    outcome = OBSERVED_AS[seen.fate]
    if observed.accepted:
        return f"observed {outcome}"
    if observed.code == "INVALID_REFERENCE" and outcome == "failed":
        # Never reported to the ledger: the effect is still claimed, and its next claim signs anew.
        return f"unreported commitment {seen.fate}: nothing was anchored"
    raise Poison(f"observation {outcome} of commitment {record.transaction_hash} rejected: {observed.code}")
