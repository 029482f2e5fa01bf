"""Tests that kill things: real Celery workers on Redis, a console process owning the ledger, the SIMULATED chain.

Every case ends the same way: each approved payment was paid exactly once on
the chain, with its exact amount to its recipient, and the ledger says the
same (confirmed, by the transaction the chain executed).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import signal
import time
from typing import Any

import pytest
import redis
from aptos_sdk.ed25519 import PrivateKey

from porto_console.effects import payment_session
from porto_console.effects.aptos_rest import AptosRestClient
from porto_console.effects.config import EffectsConfig
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.payment_journal import SignedPaymentJournal, SignedPaymentRecord
from porto_console.effects.payment_session import PaymentWorker, attempt_id
from porto_console.effects.signer import Signer
from porto_console.effects.simulated_chain import Fault
from tests.effects.conftest import PAYER_KEY, USDC
from tests.effects.approval import approved_payments, porto_ledger
from tests.effects.stack import CLAIM_TTL_MS, PAYMENTS_WORKER, WORKER_ROLES, Stack, wait_until

pytestmark = [pytest.mark.slow_kill, pytest.mark.worker, pytest.mark.fault_case]

TRANSACTION_TTL_SECS = 120  # the workers' default PORTO_TRANSACTION_TTL_SECS


@pytest.fixture
def stack(tmp_path, chain_server, broker_url, chain, funded, envelopes):
    stack = Stack(tmp_path, chain_server.url, broker_url)
    stack.approved = approve_payout_run(stack, envelopes)
    gc.collect()  # the closed owner's database handles go with its last reference, and with them the LOCK
    stack.issue_credential("payments-1")
    stack.start_console()
    yield stack
    stack.stop_all()


def approve_payout_run(stack: Stack, envelopes) -> list[dict[str, Any]]:
    """An approved payout run (allocation, statements, four eyes) and the payment worker; its payments."""
    return approved_payments(stack, envelopes, workers=((PAYMENTS_WORKER, WORKER_ROLES),))


def settled(stack: Stack) -> bool:
    return all(stack.payment(p["payment_id"])["state"] == "confirmed" for p in stack.approved)


def assert_paid_exactly_once(chain, stack: Stack) -> None:
    """The chain and the ledger agree: one successful transfer per payment, recorded as its payment."""
    wait_until(lambda: settled(stack), "every payment to be confirmed in the ledger")
    stack.stop_all()
    successes = [t for t in chain.transfers() if t["success"]]
    assert len(successes) == len(stack.approved)
    by_hash = {t["hash"]: t for t in successes}
    for approved in stack.approved:
        payment = stack.payment(approved["payment_id"])
        assert payment["state"] == "confirmed", payment
        paid_hash = "0x" + payment["paid_attempt_id"].removeprefix("tx-")
        transfer = by_hash[paid_hash]
        assert transfer["payload"]["arguments"][1:] == [approved["payout_address"], approved["amount"]]
    total = sum(int(p["amount"]) for p in stack.approved)
    assert sum(chain.balance(USDC, p["payout_address"]) for p in stack.approved) == total


def test_happy_path_pays_every_approved_payment_once(stack, chain):
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    assert_paid_exactly_once(chain, stack)


def start_with_an_answer_held(stack: Stack, chain) -> None:
    """The chain takes the first transfer and holds its answer; the worker waits on it."""
    chain.inject(Fault("drop_response", hold_seconds=60))
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    wait_until(lambda: chain.transfers(), "the first transfer to land")


def test_worker_killed_mid_effect_after_the_chain_accepted(stack, chain):
    """The whole worker dies while waiting; a new one settles what it left."""
    start_with_an_answer_held(stack, chain)
    stack.kill_worker("payments-1")
    stack.start_worker("payments-1")
    assert_paid_exactly_once(chain, stack)


def test_pool_process_killed_mid_effect_is_redelivered(stack, chain):
    """Killing the process running the task: the message is rejected back to the queue and runs again."""
    start_with_an_answer_held(stack, chain)
    for child in stack.pool_children("payments-1"):
        os.kill(child, signal.SIGKILL)
    assert_paid_exactly_once(chain, stack)


def test_chain_loses_the_answer_after_accepting(stack, chain):
    chain.inject(Fault("drop_response"), times=len(stack.approved))
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    assert_paid_exactly_once(chain, stack)


def test_same_message_redelivered_many_times(stack, chain):
    for effect in stack.open_effects("payments-1"):
        for _ in range(10):
            stack.send_effect(effect)
    stack.start_worker("payments-1", concurrency=4)
    stack.start_beat("payments-1")
    assert_paid_exactly_once(chain, stack)


def test_a_lost_follow_up_only_delays_the_observation(stack, chain):
    """Every payment is broadcast and reported; then the follow-up messages are lost with the broker's data.

    Nothing on the broker remembers the payments (their effects are done); the
    beat sweep finds their in-flight attempts and observes them.
    """
    chain.inject(Fault("confirm_late"), times=len(stack.approved))
    for effect in stack.open_effects("payments-1"):
        stack.send_effect(effect)
    stack.start_worker("payments-1")
    wait_until(lambda: all(stack.payment(p["payment_id"])["state"] == "submitted" for p in stack.approved),
               "every payment to be broadcast and reported")
    stack.kill_worker("payments-1")
    redis.Redis.from_url(stack.broker_url).flushdb()
    assert stack.open_effects("payments-1") == []
    chain.release()
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    assert_paid_exactly_once(chain, stack)


def test_late_confirmation_and_timeouts_never_sign_a_second_transfer(stack, chain):
    chain.inject(Fault("confirm_late"))
    chain.inject(Fault("timeout", hold_seconds=1))
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    first = wait_until(lambda: list(stack.journal.records()), "the first signed transfer")[0]
    # Journalled before it is broadcast: release only once the chain holds it, or the release frees nothing.
    wait_until(lambda: chain.lookup(first.transaction_hash), "the chain to hold the first transfer")
    chain.release()
    assert_paid_exactly_once(chain, stack)
    assert len({r.payment_id for r in stack.journal.records()}) == len(stack.approved)


def test_ledger_owner_restarted_between_sign_and_broadcast(stack, chain):
    """The broadcast hangs after the attempt is recorded; the console dies and comes back meanwhile."""
    chain.inject(Fault("timeout", hold_seconds=4))
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    wait_until(lambda: list(stack.journal.records()), "the first signed transfer")
    stack.stop_console(kill=True)
    stack.start_console()
    assert_paid_exactly_once(chain, stack)


def test_console_killed_between_the_journal_and_the_ledger_frees_the_sequence_without_a_sweep(stack, chain):
    """The first signature is journalled while the console is dead, so the ledger never records it.

    The signer asks the chain for its sequence just before signing; the console dies right then. Every
    later transfer would wait behind the stranded sequence. No beat runs, so no sweep resends anything:
    the batch's own retry, or the payer's repair, records those exact journalled bytes and sends them.
    """
    ask_sequence, killed = chain.sequence_number, []

    def kill_the_console_before_the_first_signature(address):
        """The sequence a worker asks for once it holds a claim is the one it signs at."""
        if not killed and any(effect["claim"] for effect in stack.open_effects("payments-1")):
            killed.append(stack.console.pid)
            os.kill(stack.console.pid, signal.SIGKILL)
        return ask_sequence(address)

    chain.sequence_number = kill_the_console_before_the_first_signature
    for effect in stack.open_effects("payments-1"):
        stack.send_effect(effect)
    stack.start_worker("payments-1")
    first = wait_until(lambda: list(stack.journal.records()), "the first signed transfer")[0]
    stack.console.wait()
    stack.start_console()
    assert_paid_exactly_once(chain, stack)
    assert first.sequence_number == 0 and stack.payment(first.payment_id)["paid_attempt_id"] == attempt_id(first)
    assert len(list(stack.journal.records())) == len(stack.approved)  # nothing was signed twice


def test_restore_from_a_backup_taken_before_the_broadcast(stack, chain, tmp_path):
    """Host loss after a backup that holds a signed, unbroadcast attempt: reconcile, then resume; nothing is paid twice."""
    chain.inject(Fault("timeout", hold_seconds=6))
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    first = wait_until(lambda: list(stack.journal.records()), "the first signed transfer")[0]
    wait_until(lambda: stack.payment(first.payment_id)["state"] == "signed", "the attempt to be recorded")
    stack.stop_console()
    backup = tmp_path / "backups" / "before-broadcast"
    porto_ledger("--data", str(stack.data_dir), "backup", str(backup))
    stack.start_console()
    wait_until(lambda: settled(stack), "every payment to be confirmed before the host is lost")
    stack.stop_all()

    stack.data_dir = tmp_path / "restored" / "ledger"
    assert porto_ledger("restore", str(backup), "--data", str(stack.data_dir))["dispatch_enabled"] is False
    assert stack.payment(first.payment_id)["state"] == "signed"
    stack.start_console()
    report = stack.reconcile()
    assert report["safe_to_resume"], report
    assert report["observed"] == {"confirmed": len(stack.approved)}
    resume_after_reconcile(stack, chain)


def test_restore_from_a_backup_taken_before_the_attempts_were_recorded(stack, chain, tmp_path):
    """The restored ledger never saw any attempt; every transfer landed and expired before reconcile."""
    stack.stop_console()
    backup = tmp_path / "backups" / "before-any-attempt"
    porto_ledger("--data", str(stack.data_dir), "backup", str(backup))
    stack.start_console()
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    wait_until(lambda: settled(stack), "every payment to be confirmed before the host is lost")
    stack.stop_all()
    chain.advance(TRANSACTION_TTL_SECS + 60)

    stack.data_dir = tmp_path / "restored" / "ledger"
    porto_ledger("restore", str(backup), "--data", str(stack.data_dir))
    assert {stack.payment(p["payment_id"])["state"] for p in stack.approved} == {"approved"}
    stack.start_console()
    reports = [stack.reconcile() for _ in range(3)]  # reconcile may run any number of times
    report = reports[0]
    assert report["safe_to_resume"], report
    assert (report["observed"], report["recorded_attempts"]) == ({"confirmed": len(stack.approved)},
                                                                 len(stack.approved))
    assert [{**r, "seconds": 0} for r in reports[1:]] == [{**report, "seconds": 0}] * 2
    resume_after_reconcile(stack, chain)
    assert len(list(stack.journal.records())) == len(stack.approved)


def journal_unrecorded_signature(stack: Stack, *, ttl_secs: int | None = None,
                                 refused_after_lapse: bool = False) -> SignedPaymentRecord:
    """What a worker leaves when the console dies right after the journal's fsync: a claim, a journalled
    signature at the payer's next sequence, and no attempt in the ledger."""
    worker = PaymentWorker(EffectsConfig.from_env(stack.worker_env("payments-1")), LedgerApi(
        stack.api_url, stack.tokens["payments-1"]), AptosRestClient(stack.chain_url, simulated=True),
        Signer(PrivateKey.from_str(PAYER_KEY, strict=False)), SignedPaymentJournal(stack.journal.path),
        LedgerApi(stack.api_url, stack.tokens["payments-1-observer"]))
    if ttl_secs is not None:
        worker.config = dataclasses.replace(worker.config, transaction_ttl_secs=ttl_secs)
    report = payment_session.BatchReport()
    (claimed,) = payment_session.claim_all(worker, stack.open_effects("payments-1")[:1], report)
    _, (signed,) = payment_session.sign_all(worker, [claimed], report)
    record = signed.record
    if refused_after_lapse:  # the worker stalled past its lease: the ledger refuses to record the bytes
        time.sleep(CLAIM_TTL_MS / 1000 + 0.5)
        late = payment_session.record_attempt(worker, record, claim_expires_ms=claimed.expires_at_ms)
        assert late.code == "CLAIM_EXPIRED"
    assert payment_session.ledger_attempt(worker, record) is None
    return record


def test_a_signature_journalled_but_never_recorded_is_recorded_with_its_bytes_and_broadcast(stack, chain):
    """Every later transfer would wait behind its sequence; the journal check gets it recorded and sent."""
    stranded = journal_unrecorded_signature(stack, refused_after_lapse=True)
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    assert_paid_exactly_once(chain, stack)
    paid = stack.payment(stranded.payment_id)
    assert paid["paid_attempt_id"] == f"tx-{stranded.transaction_hash[2:]}"  # those exact journalled bytes
    assert [t["hash"] for t in chain.transfers()][stranded.sequence_number] == stranded.transaction_hash
    assert len(list(stack.journal.records())) == len(stack.approved)  # nothing was signed twice


def test_a_journalled_signature_that_can_never_land_releases_its_sequence(stack, chain):
    """Signed, never recorded, expired on chain: nothing was sent, its sequence is used by another transfer."""
    stranded = journal_unrecorded_signature(stack, ttl_secs=1)
    chain.advance(5)
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    assert_paid_exactly_once(chain, stack)
    landed = chain.transfers()
    assert stranded.transaction_hash not in {t["hash"] for t in landed}
    assert stranded.sequence_number in {int(t["sequence_number"]) for t in landed}


def resume_after_reconcile(stack: Stack, chain) -> None:
    """The operator promotes the reconciled ledger, so dispatch runs again; the workers find nothing left to pay."""
    stack.stop_console()
    assert stack.promote("reconciled against the chain and the signed-payment journal") is True
    stack.start_console()
    stack.start_worker("payments-1")
    stack.start_beat("payments-1")
    assert_paid_exactly_once(chain, stack)
