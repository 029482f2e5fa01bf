"""Observation commands are named by what they assert, so an identical repeat is a duplicate, never a conflict;
the payment worker sends them under its observer's credential, never its own (docs/adr/0090)."""

from __future__ import annotations

import hashlib

import pytest

from porto_console.effects import payment_session, tasks
from porto_console.effects.chain import ChainTransaction, Fate, LedgerState, Observation
from porto_console.effects.config import EffectsConfig
from porto_console.effects.effect_worker import Poison, Transient
from porto_console.effects.ledger_api import LedgerRefused, LedgerUnreachable, Outcome, command_id_for
from porto_console.effects.payment_journal import JournalCorrupt, SignedPaymentRecord
from porto_console.effects.payment_session import PaymentWorker

TX = "0x" + "ab" * 32


class RecordingApi:
    """The internal API as the worker sees it: evidence by digest, commands recorded with their IDs."""

    def __init__(self):
        self.commands: list[dict] = []

    def store_evidence(self, data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def submit(self, command_type, payload, *, command_id, expected_revisions=(), evidence_hashes=()):
        self.commands.append({"command_id": command_id, "command_type": command_type, "payload": payload})
        return Outcome(command_id, len(self.commands), "accepted", "OK", {"code": "OK", "data": {}}, False)

    def submit_all(self, commands, evidence=()):
        return [self.submit(command.command_type, command.payload, command_id=command.command_id)
                for command in commands]

    def ledger_now_ms(self):
        return 1_800_000_000_000


class Label:
    """A chain that only names itself and the time."""

    label = "SIMULATED"

    def ledger_state(self):
        return LedgerState(20, 1_800_000_005_000_000)


WORKER_ENV = {"PORTO_WORKER_ID": "payments-worker-1", "PORTO_OBSERVER_ID": "payments-observer-1",
              "PORTO_OBSERVER_TOKEN": "observer-token"}


@pytest.fixture
def worker() -> PaymentWorker:
    return PaymentWorker(EffectsConfig.from_env(WORKER_ENV), RecordingApi(), Label(), None, None, RecordingApi())


def record() -> SignedPaymentRecord:
    return SignedPaymentRecord("run-1.artist-a", "run-1.artist-a.effect", "payments-worker-1", TX, "0x" + "11" * 32,
                               3, "0x" + "cc" * 32, "0x" + "a1" * 32, "250000", 1_800_000_120, 4, "00", 0)


def committed(read_at_version: int, read_at_us: int) -> Observation:
    landed = ChainTransaction(TX, True, True, "Executed successfully", 17, 1_800_000_001_000_000)
    return Observation(Fate.SUCCESS, TX, LedgerState(read_at_version, read_at_us), landed)


def absent(read_at_version: int, read_at_us: int) -> Observation:
    return Observation(Fate.EXPIRED, TX, LedgerState(read_at_version, read_at_us), None)


def test_every_look_at_a_committed_transaction_is_the_same_command(worker):
    """Read at different chain versions and times, a landed transfer asserts the same facts: one command."""
    for version, time_us in ((20, 1_800_000_005_000_000), (20, 1_800_000_009_000_000), (31, 1_800_000_030_000_000)):
        payment_session.record_observation(worker, record(), committed(version, time_us))
    first, *repeats = worker.observer.commands
    assert all(repeat == first for repeat in repeats) and len(repeats) == 2
    assert (first["payload"]["ledger_version"], first["payload"]["chain_time_ms"]) == (17, 1_800_000_001_000)


def test_readings_that_differ_are_different_commands_each_consistent_with_its_id(worker):
    """An absence rests on the read itself: each reading is its own command; one ID never carries other content."""
    readings = [absent(20, 1_800_000_200_000_000), absent(21, 1_800_000_201_000_000), absent(20, 1_800_000_200_000_000)]
    for seen in readings:
        payment_session.record_observation(worker, record(), seen)
    by_id: dict[str, dict] = {}
    for command in worker.observer.commands:
        assert by_id.setdefault(command["command_id"], command) == command
    assert len(by_id) == 2


def test_the_outcome_is_part_of_what_is_asserted(worker):
    payment_session.record_observation(worker, record(), committed(20, 1_800_000_005_000_000))
    payment_session.record_observation(worker, record(), absent(20, 1_800_000_200_000_000))
    assert len({command["command_id"] for command in worker.observer.commands}) == 2


def test_the_signer_records_attempts_and_its_observer_what_the_chain_did_with_them(worker):
    """The worker's own credential signs; every observation, a landed transfer's included, goes through the other,
    named by the observer's actor, and a landed transfer names the signer whose journal holds its bytes."""
    payment_session.record_attempt(worker, record(), claim_expires_ms=1_800_000_060_000)
    payment_session.record_observation(worker, record(), committed(20, 1_800_000_005_000_000))
    payment_session.record_landed(worker, record(), committed(20, 1_800_000_005_000_000))
    assert [command["command_type"] for command in worker.api.commands] == ["RecordSignedAttempt"]
    observed, landed = worker.observer.commands
    assert (observed["command_type"], landed["command_type"]) == ("RecordTransferObservation", "RecordLandedAttempt")
    assert landed["payload"]["signed_by"] == record().worker_id == "payments-worker-1"
    assert observed["command_id"] == command_id_for("payments-observer-1", "RecordTransferObservation",
                                                    f"tx-{TX[2:]}", "confirmed",
                                                    observed["payload"]["evidence_digest"])


def test_an_attempt_recorded_under_another_claim_is_another_command(worker):
    payment_session.record_attempt(worker, record(), claim_expires_ms=1_800_000_060_000)
    payment_session.record_attempt(worker, record(), claim_expires_ms=1_800_000_060_000)
    payment_session.record_attempt(worker, record(), claim_expires_ms=1_800_000_090_000)
    first, again, later = worker.api.commands
    assert first == again and later["command_id"] != first["command_id"] and later["payload"] == first["payload"]


@pytest.mark.parametrize("error", [LedgerUnreachable("GET /dispatch: ConnectError"), Transient("CLAIM_EXPIRED")])
def test_transient_failures_retry_without_a_limit(error):
    assert isinstance(error, tasks.TRANSIENT)
    assert all(task.max_retries is None for task in (tasks.payment, tasks.follow_payer, tasks.repair_payer))


@pytest.mark.parametrize("error, cause", [
    (Poison("attempt refused: CONFLICTING_EVIDENCE"), "refused rule"),
    (LedgerRefused("COMMAND_NOT_ALLOWED", "no"), "refused request: the internal API answered COMMAND_NOT_ALLOWED"),
    (JournalCorrupt("line 3: the hash chain is broken"),
     "malformed record: the signed-payment journal does not verify"),
    (KeyError("amount"), "malformed record or program error: KeyError"),
])
def test_permanent_failures_are_quarantined_with_their_cause(error, cause, tmp_path, monkeypatch):
    from porto_console.effects.quarantine import Quarantine

    assert not isinstance(error, tasks.TRANSIENT)
    parked = Quarantine(tmp_path)
    monkeypatch.setattr(tasks, "quarantine", lambda: parked)
    task = tasks.payment
    task.on_failure(error, "task-id", ({"effect_id": "run-1.artist-a.effect", "kind": "payment.transfer"},), {}, None)
    (entry,) = parked.entries()
    assert entry["effect_id"] == "run-1.artist-a.effect" and entry["cause"].startswith(cause)


class InFlight(RecordingApi):
    """A ledger holding one attempt in flight, of a transaction no journal here holds."""

    def in_flight_attempts(self):
        return [{"attempt_id": f"tx-{TX[2:]}", "effect_id": "run-1.artist-a.effect", "transaction_hash": TX,
                 "sender_address": PAYER, "sender_sequence": 3, "outcome": "submitted"}]


class QuietChain(Label):
    def sequence_number(self, address):
        return 3

    def transaction(self, transaction_hash):
        return None

    def account_transactions(self, address, start, limit):
        return []


PAYER = "0x" + "11" * 32


def test_a_followed_transaction_missing_from_the_signers_journal_parks_its_effect(tmp_path, monkeypatch):
    """Nothing here can follow it; the effect it carries out goes to the quarantine, where an operator sees it."""
    from porto_console.effects import payer_follow
    from porto_console.effects.payment_journal import SignedPaymentJournal
    from porto_console.effects.quarantine import Quarantine

    parked = Quarantine(tmp_path / "quarantine")
    monkeypatch.setattr(tasks, "quarantine", lambda: parked)
    empty = PaymentWorker(EffectsConfig.from_env(WORKER_ENV), InFlight(), QuietChain(), None,
                          SignedPaymentJournal(tmp_path / "signed-payments.jsonl"), InFlight(), park=tasks.park)
    assert payer_follow.settle_once(empty, PAYER).in_flight == 0
    (entry,) = parked.entries()
    assert (entry["effect_id"], entry["kind"]) == ("run-1.artist-a.effect", "payment.transfer")
    assert TX in entry["reason"] and entry["cause"].startswith("refused rule")


def test_two_claims_of_one_effect_in_the_same_millisecond_are_two_commands(worker, monkeypatch):
    """Two processes of one worker, one message each: the ledger must see two claims, so that one loses."""
    from porto_console.effects import effect_worker

    effect = {"effect_id": "run-1.artist-a.effect", "revision": 1}
    effect_worker.claim(worker, effect)
    effect_worker.claim(worker, effect)
    first, second = worker.api.commands
    assert first["payload"] == second["payload"] and first["command_id"] != second["command_id"]
