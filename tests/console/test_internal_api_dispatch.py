"""The internal API around dispatch: the dispatch switch, payment and in-flight attempt reads, backups."""

from __future__ import annotations

import time
import uuid
import pytest

from ledger_engine.checkpoint.offsite import recover
from ledger_engine.domain.commands.money.payments import payment_key
from porto_console.effects.backups import configured_repository
from porto_console.internal_api import credentials
from porto_console.ledger import close_owner, gateway, open_owner
from tests.console.test_internal_api import COMMANDS, Worker, assert_error, claim_body
from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.world import PayoutWorld, transaction_hash
from tests.conftest import GENESIS_ADMIN
from tests.support import step_up
from tests.support.dispatch_switch import pause, resume

pytestmark = pytest.mark.django_db

API_WORKERS = {"api-dispatcher": ["dispatcher"], "api-signer": ["signer"], "api-maintenance": ["maintenance"],
               "api-observer": ["observer"], "api-ingest": ["ingest"], "api-coordinator": ["coordinator"],
               "api-payments": ["dispatcher", "observer"]}  # a payment worker's observer: never its signer


@pytest.fixture
def payouts(tmp_path, envelopes) -> PayoutWorld:
    """An approved payout run on the console's ledger, and worker actors for the API's credentials."""
    owner = open_owner(tmp_path / "ledger", genesis=step_up.genesis())
    for actor, roles in API_WORKERS.items():
        assert owner.submit(envelopes.account(actor, kind="worker", roles=roles)).accepted
    with fixture_commands():
        world = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup()
        assert world.prepare("run-1").accepted
        assert world.approve("run-1", world.confirmed_statements()).accepted
        yield world
    close_owner()


def worker(name: str) -> Worker:
    return Worker.issued(name, [t for role in API_WORKERS[name] for t in credentials.commands_for_role(role)])


def payment_ids(payouts: PayoutWorld) -> list[str]:
    return [row["data"]["payment_id"] for _, row in payouts.owner.scan("state", "payment/", limit=100)]


def in_flight(payouts: PayoutWorld, count: int) -> list[str]:
    """Sign ``count`` payments' first attempts (one of them also submitted); their attempt IDs."""
    attempt_ids = []
    for payment_id in payment_ids(payouts)[:count]:
        attempt_id = f"attempt-{payment_id}"
        assert payouts.claim(payouts.state(payment_key(payment_id))["effect_id"]).accepted
        assert payouts.sign(payment_id, attempt_id).accepted
        attempt_ids.append(attempt_id)
    assert payouts.observe(attempt_ids[0], "submitted").accepted
    return sorted(attempt_ids)


# Dispatch.

def test_dispatch_reads_enabled_and_the_reason_it_was_disabled(payouts):
    observer = worker("api-observer")
    assert observer.get("/internal/dispatch").json() == {"enabled": True, "reason": "never paused"}
    pause(payouts.owner, actor=GENESIS_ADMIN, reason="rotating the payer key")
    assert observer.get("/internal/dispatch").json() == {"enabled": False, "reason": "rotating the payer key"}


def test_while_dispatch_is_disabled_claims_and_signed_attempts_are_refused_and_change_nothing(payouts):
    payment_id = payment_ids(payouts)[0]
    effect_id = payouts.state(payment_key(payment_id))["effect_id"]
    pause(payouts.owner, actor=GENESIS_ADMIN)
    head = payouts.owner.head()
    dispatcher, signer = worker("api-dispatcher"), worker("api-signer")

    # The payout world's clock ran ahead of this host's; the gateway admits at the ledger's time then.
    claim = {**claim_body(), "expires_at_ms": max(time.time_ns() // 1_000_000, payouts.owner.admission_floor_ms())
             + 60_000}
    assert_error(dispatcher.post(f"/internal/effects/{effect_id}/claim", claim), 503, "DISPATCH_DISABLED")
    attempt = payouts.attempt_payload(payment_id, "attempt-1", claimed_by="api-dispatcher")
    gateway().evidence.put(b"signed bytes")
    record = {"command_id": str(uuid.uuid4()), "command_type": "RecordSignedAttempt", "payload": attempt,
              "evidence_hashes": [attempt["signed_bytes_hash"]]}
    assert_error(signer.post(COMMANDS, record), 503, "DISPATCH_DISABLED")

    assert payouts.owner.head() == head
    assert gateway().envelopes.load(claim["command_id"]) is None
    assert gateway().envelopes.load(record["command_id"]) is None
    assert payouts.state(payment_key(payment_id))["state"] == "approved"

    assert payouts.owner.submit(payouts.money.envelopes.account("ops-1", roles=["ops"])).accepted
    resume(payouts.owner, requester="ops-1", approver=GENESIS_ADMIN)
    assert dispatcher.post(f"/internal/effects/{effect_id}/claim", claim).json()["outcome"] == "accepted"


def test_other_commands_still_run_while_dispatch_is_disabled(payouts):
    attempt_id = in_flight(payouts, 1)[0]
    pause(payouts.owner, actor=GENESIS_ADMIN)
    attempt = payouts.state(f"payment_attempt/{attempt_id}")
    digest = gateway().evidence.put(b"chain evidence")
    observation = {"command_id": str(uuid.uuid4()), "command_type": "RecordTransferObservation",
                   "evidence_hashes": [digest], "payload": {
                       "payment_id": attempt["payment_id"], "attempt_id": attempt_id,
                       "transaction_hash": attempt["transaction_hash"], "outcome": "confirmed",
                       "ledger_version": 7, "chain_time_ms": payouts.now_ms, "evidence_digest": digest}}
    outcome = worker("api-payments").post(COMMANDS, observation).json()
    assert (outcome["outcome"], outcome["code"]) == ("accepted", "OK")


# Payments and in-flight attempts.

def test_a_payment_is_read_with_its_attempts_at_one_sequence(payouts):
    attempt_id = in_flight(payouts, 1)[0]
    payment_id = payouts.state(f"payment_attempt/{attempt_id}")["payment_id"]
    body = worker("api-observer").get(f"/internal/payments/{payment_id}").json()
    assert body["sequence"] == payouts.owner.head().sequence
    assert body["payment"] == {**payouts.state(payment_key(payment_id)), "revision": body["payment"]["revision"]}
    assert body["payment"]["state"] == "submitted"
    assert [(a["attempt_id"], a["outcome"], a["transaction_hash"]) for a in body["attempts"]] == [
        (attempt_id, "submitted", transaction_hash(attempt_id))]


def test_an_unknown_or_malformed_payment_id_is_refused(payouts):
    observer = worker("api-observer")
    assert_error(observer.get("/internal/payments/no-such-payment"), 404, "NOT_FOUND")
    assert_error(observer.get("/internal/payments/a b"), 400, "INVALID_REQUEST")


def test_in_flight_attempts_are_listed_in_pages_and_settled_ones_are_not(payouts):
    attempt_ids = in_flight(payouts, 3)
    observer = worker("api-observer")

    first = observer.get("/internal/attempts", limit=2).json()
    assert first["sequence"] == payouts.owner.head().sequence
    assert [a["attempt_id"] for a in first["attempts"]] == attempt_ids[:2]
    second = observer.get("/internal/attempts", limit=2, cursor=first["next_cursor"]).json()
    assert ([a["attempt_id"] for a in second["attempts"]], second["next_cursor"]) == (attempt_ids[2:], None)

    assert payouts.observe(attempt_ids[1], "confirmed").accepted
    listed = observer.get("/internal/attempts").json()["attempts"]
    assert [(a["attempt_id"], a["outcome"], a["revision"] >= 1) for a in listed] == [
        (attempt_ids[0], payouts.state(f"payment_attempt/{attempt_ids[0]}")["outcome"], True),
        (attempt_ids[2], "pending", True)]


def test_in_flight_batches_are_those_whose_anchor_was_broadcast_and_not_yet_observed(payouts):
    from tests.money_payouts.world import COMMITTER, transaction_hash

    for batch_id in ("batch-a", "batch-b", "batch-c"):
        anchor = payouts.batch(batch_id, "allocation")
        assert payouts.claim(anchor, actor=COMMITTER).accepted
        outcome = "unknown" if batch_id == "batch-b" else "submitted"
        assert payouts.complete(anchor, outcome, transaction_hash("commitment", batch_id), actor=COMMITTER).accepted
    assert payouts.observe_commitment("batch-c", transaction_hash("commitment", "batch-c"), "confirmed").accepted
    observer = worker("api-observer")

    first = observer.get("/internal/batches", limit=1).json()
    assert first["sequence"] == payouts.owner.head().sequence
    second = observer.get("/internal/batches", limit=1, cursor=first["next_cursor"]).json()
    listed = first["batches"] + second["batches"]
    assert [(b["batch_id"], b["state"]) for b in listed] == [("batch-a", "submitted"), ("batch-b", "uncertain")]
    assert listed[0]["transaction_hash"] == transaction_hash("commitment", "batch-a")
    assert second["next_cursor"] is None


def effect_reads(payouts: PayoutWorld) -> list[str]:
    """Every read that names recipients' payout addresses or amounts."""
    payment_id = payment_ids(payouts)[0]
    effect_id = payouts.state(payment_key(payment_id))["effect_id"]
    return ["/internal/effects", f"/internal/effects/{effect_id}", f"/internal/payments/{payment_id}",
            "/internal/attempts", "/internal/batches"]


@pytest.mark.parametrize("name", ["api-ingest", "api-coordinator", "api-maintenance"])
def test_workers_that_carry_out_no_effect_do_not_read_effects_payments_attempts_or_batches(payouts, name):
    in_flight(payouts, 1)
    outsider, observer = worker(name), worker("api-observer")
    for path in effect_reads(payouts):
        assert_error(outsider.get(path), 403, "COMMAND_NOT_ALLOWED")
        assert observer.get(path).status_code == 200
    assert outsider.get("/internal/head").json()["sequence"] == payouts.owner.head().sequence


def test_a_credential_with_no_command_reads_no_payment(payouts):
    stranger = Worker(credentials.issue("stranger", "api-observer", [])[1])
    for path in effect_reads(payouts):
        assert_error(stranger.get(path), 403, "COMMAND_NOT_ALLOWED")


@pytest.mark.parametrize("query", [{"limit": 0}, {"limit": 201}, {"cursor": "a/b"}])
def test_bad_attempt_queries_are_400(payouts, query):
    assert_error(worker("api-observer").get("/internal/attempts", **query), 400, "INVALID_REQUEST")


# Backups.

def test_a_maintenance_worker_gets_a_backup_when_one_is_due_and_the_newest_otherwise(
        payouts, settings, backup_repository):
    maintenance = worker("api-maintenance")
    taken = maintenance.post("/internal/maintenance/backups", b"").json()
    assert (taken["taken"], taken["sequence"]) == (True, payouts.owner.head().sequence)
    again = maintenance.post("/internal/maintenance/backups", b"").json()
    assert (again["taken"], again["snapshot"]) == (False, taken["snapshot"])  # the newest is younger than the interval
    restored = recover(settings.BACKUP_STAGING_DIR.parent / "new" / "ledger",
                       settings.BACKUP_STAGING_DIR.parent / "new" / "admission", repository=configured_repository())
    assert (restored["snapshot"], restored["sequence"]) == (taken["snapshot"], taken["sequence"])


def test_a_repository_restic_cannot_use_is_a_bad_gateway_with_its_code(payouts, settings, tmp_path):
    unusable = tmp_path / "not-a-repository"
    unusable.write_text("a file where the repository should be\n")
    settings.BACKUP_REPOSITORY = str(unusable)
    assert_error(worker("api-maintenance").post("/internal/maintenance/backups", b""), 502,
                 "BACKUP_REPOSITORY_FAILED")


@pytest.mark.parametrize("name", ["api-observer", "api-dispatcher"])
def test_only_the_maintenance_role_may_take_backups(payouts, settings, tmp_path, name):
    assert_error(worker(name).post("/internal/maintenance/backups", b""), 403, "COMMAND_NOT_ALLOWED")
    assert not settings.BACKUP_DIR.exists()  # no repository was even created


def test_a_credential_for_an_actor_the_ledger_does_not_know_may_not_take_backups(payouts, settings, tmp_path):
    stranger = Worker(credentials.issue("stranger", "nobody-1", [])[1])
    assert_error(stranger.post("/internal/maintenance/backups", b""), 403, "COMMAND_NOT_ALLOWED")
