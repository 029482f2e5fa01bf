"""What every effect session shares: a worker's collaborators, its lease, broadcasting and watching the chain.

A session (``payment_session``, ``commitment_session``) claims its effect,
signs or reuses one journalled transaction, broadcasts it and watches it by
hash until the chain settles its fate. Every command carries an ID derived
from the worker, the step and its subject, so a repeated step is the same
command and the ledger runs it once.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ledger_engine.canonical import canonical_bytes
from ledger_engine.open_json import RecordData, Unvalidated
from porto_console.effects.chain import ChainClient, ChainUncertain, Fate, Observation, SubmitRefused, observe
from porto_console.effects.config import EffectsConfig, NotConfigured
from porto_console.effects.ledger_api import Answer, Command, LedgerApi, LedgerRefused, Outcome, command_id_for
from porto_console.effects.journal_port import JournalPort
from porto_console.effects.signed_journal import SignedRecord
from porto_console.effects.signer import Signer

log = logging.getLogger("porto.effects")

SETTLED = (Fate.SUCCESS, Fate.FAILED, Fate.EXPIRED)
POLL_SECS = 0.05
MAX_POLL_SECS = 1.0


class Poison(Exception):
    """The ledger or the chain contradicts this effect's records: an operator must look.

    ``effect_id`` names the effect to park, when the task's subject is a transaction rather than an effect.
    """

    def __init__(self, detail: str, effect_id: str | None = None) -> None:
        super().__init__(detail, effect_id)
        self.effect_id = effect_id

    def __str__(self) -> str:
        return self.args[0]


class Transient(Exception):
    """This step failed for a reason that passes (a lease not yet lapsed, a sequence not yet released): retry it."""


class NotYet(Exception):
    """The effect cannot move now (a transaction may still land, a lease is held); try again later.

    ``transaction_hash`` names the transaction to keep following, when there is one.
    """

    def __init__(self, detail: str, transaction_hash: str | None = None) -> None:
        super().__init__(detail, transaction_hash)
        self.transaction_hash = transaction_hash


@dataclass
class EffectWorker:
    """The collaborators of one worker process: its ledger credential, the chain, its key and its journal."""

    config: EffectsConfig
    api: LedgerApi
    chain: ChainClient
    signer: Signer
    journal: JournalPort

    @property
    def worker_id(self) -> str:
        if self.config.worker_id is None:
            raise NotConfigured("no worker actor: set PORTO_WORKER_ID")
        return self.config.worker_id

    def command_of(self, command_type: str, payload: Unvalidated, *parts: str, **extra: Any) -> Command:
        """The command, named by this worker, its type and ``parts`` (what it is about)."""
        return Command(command_type, payload, command_id_for(self.worker_id, command_type, *parts), **extra)

    def command(self, command_type: str, payload: Unvalidated, *parts: str, **extra: Any) -> Outcome:
        command = self.command_of(command_type, payload, *parts, **extra)
        return self.api.submit(command_type, payload, command_id=command.command_id, **extra)

    def submit_all(self, commands: Sequence[Command], evidence: Sequence[bytes] = ()) -> list[Answer]:
        return self.api.submit_all(commands, evidence)


def claim(worker: EffectWorker, effect: RecordData) -> Outcome:
    """A fresh lease on the effect at the revision the message names (``claim_command``)."""
    command = claim_command(worker, effect, worker.api.ledger_now_ms() + worker.config.claim_ttl_ms)
    return worker.api.submit(command.command_type, command.payload, command_id=command.command_id,
                             expected_revisions=list(command.expected_revisions))


def claim_command(worker: EffectWorker, effect: RecordData, expires_at_ms: int) -> Command:
    """``ClaimEffect`` at the effect's listed revision, until ``expires_at_ms`` on the ledger's clock.

    Each delivery asks for its own lease, so a duplicate delivery after the
    first claim finds the revision moved on (STALE_REVISION) and stands back.
    Each ask is its own command (``delivery_nonce``): two processes of one
    worker claiming in the same millisecond would otherwise send the same
    command, and the second would be answered with the first's acceptance
    and work the effect beside it.
    """
    delivery_nonce = uuid.uuid4().hex
    return worker.command_of(
        "ClaimEffect", {"effect_id": effect["effect_id"], "expires_at_ms": expires_at_ms},
        effect["effect_id"], str(effect["revision"]), str(expires_at_ms), delivery_nonce,
        expected_revisions=[{"cf": "outbox", "key": effect["effect_id"], "revision": effect["revision"]}])


def complete(worker: EffectWorker, effect_id: str, revision: int, sent: bool, record: SignedRecord,
             **extra: Any) -> None:
    """``CompleteEffect`` ``submitted`` (the chain acknowledged the bytes) or ``unknown``, naming the transaction."""
    command = complete_command(worker, effect_id, revision, sent, record, **extra)
    report = worker.api.submit(command.command_type, command.payload, command_id=command.command_id,
                               expected_revisions=list(command.expected_revisions),
                               evidence_hashes=list(command.evidence_hashes))
    note_completion(effect_id, report)


def complete_command(worker: EffectWorker, effect_id: str, revision: int, sent: bool, record: SignedRecord,
                     **extra: Any) -> Command:
    outcome = "submitted" if sent else "unknown"
    return worker.command_of(
        "CompleteEffect", {"effect_id": effect_id, "outcome": outcome, "transaction_hash": record.transaction_hash},
        effect_id, str(revision), expected_revisions=[{"cf": "outbox", "key": effect_id, "revision": revision}],
        **extra)


def note_completion(effect_id: str, report: Answer) -> None:
    """A report the ledger did not take changes nothing: the chain observation settles the effect."""
    if not (isinstance(report, Outcome) and report.accepted):
        code = report.code if isinstance(report, (Outcome, LedgerRefused)) else str(report)
        log.info("report on %s not recorded (%s); the observation will settle it", effect_id, code)


def broadcast(worker: EffectWorker, record: SignedRecord) -> bool:
    """Send the journalled bytes; True when the chain acknowledged them."""
    try:
        worker.chain.submit(record.signed_bytes)
        return True
    except (ChainUncertain, SubmitRefused) as error:
        log.info("broadcast of %s unacknowledged: %s", record.transaction_hash, error)
        return False


def look_up(worker: EffectWorker, record: SignedRecord) -> Observation:
    """One observation of a journalled transaction; the journal names who else may have used its sequence."""
    return observe(worker.chain, record, lambda: worker.journal.at_sequence(record.sender, record.sequence_number))


def may_still_land(worker: EffectWorker, record: SignedRecord) -> bool:
    """Whether the chain leaves this transaction a chance: not failed, not expired, its sequence not used by another.

    Raises ``ChainUncertain`` when the chain cannot say (``observe``): a new
    transaction is then not signed in its place.
    """
    return look_up(worker, record).may_still_land


def watch(worker: EffectWorker, record: SignedRecord, *, may_rebroadcast: Callable[[], bool],
          window_secs: int | None = None) -> Observation:
    """Watch one signed transaction until the chain settles its fate; returns that observation.

    Bytes the chain does not know are broadcast again when ``may_rebroadcast``
    allows it: the same bytes land at most once. Raises ``NotYet`` when the
    observation window (``window_secs``, default ``PORTO_OBSERVE_WINDOW_SECS``;
    0 looks once) closes first.
    """
    window_secs = worker.config.observe_window_secs if window_secs is None else window_secs
    deadline = time.monotonic() + window_secs
    delay = POLL_SECS
    while True:
        seen = look_up(worker, record)
        if seen.fate in SETTLED:
            return seen
        if seen.fate == Fate.UNKNOWN and seen.may_still_land and may_rebroadcast():
            broadcast(worker, record)
        if time.monotonic() >= deadline:
            raise NotYet(f"{seen.fate} after {window_secs}s", record.transaction_hash)
        time.sleep(delay)
        delay = min(delay * 2, MAX_POLL_SECS)


def chain_reading(worker: EffectWorker, seen: Observation) -> Unvalidated:
    """The chain evidence, stored with the ledger owner first, and the version and time it speaks for."""
    return reading_of(seen, worker.api.store_evidence(evidence_of(worker, seen)))


def evidence_of(worker: EffectWorker, seen: Observation) -> bytes:
    """What an observation asserts about the chain, as the bytes stored for it."""
    return canonical_bytes(seen.evidence(worker.chain.label))


def reading_of(seen: Observation, digest: str) -> Unvalidated:
    """The version and time the evidence (stored under ``digest``) speaks for.

    Everything here is a function of the evidence, so an observation
    command named by its evidence digest always has the same content.
    """
    return {"ledger_version": seen.ledger_version, "chain_time_ms": seen.chain_time_us // 1000,
            "evidence_digest": digest}
