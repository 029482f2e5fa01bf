"""Payments in batches, one follower per payer, a repair per payer: in one process against the real console and chain.

Each test pays approved payments through the session, the payer's follower and its repair as the Celery tasks
call them (``pipeline``), and ends the same way: every payment confirmed in the ledger by the one transfer the
chain executed for it, nothing parked.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from porto_console.effects import payer_follow, payer_repair, payment_session
from porto_console.effects.effect_worker import Transient
from porto_console.ledger import close_owner, open_owner
from tests.effects.chain_process import ChainProcess
from tests.effects.conftest import CHAIN_ID, USDC
from tests.effects.pipeline import (
    CLAIM_TTL_MS, Scheduler, build_ledger, open_effects, payment_states, payment_worker,
)
from tests.effects.stack import GENESIS

pytestmark = pytest.mark.django_db

WORKERS = ("payments-worker-1", "payments-worker-2")


@pytest.fixture
def console(tmp_path, envelopes, settings):
    """A console owning a ledger with five approved payout runs (25 payments); the payments."""
    settings.EFFECTS_ENABLED = False  # what would be announced is carried out by the test itself

    def start(runs: int = 5) -> list[dict[str, Any]]:
        payments = build_ledger(tmp_path / "ledger", envelopes, runs, WORKERS)
        open_owner(tmp_path / "ledger", genesis=GENESIS)
        return payments

    yield start
    close_owner()


def paid_once(chain, payments: list[dict[str, Any]]) -> None:
    """The ledger and the chain agree: each payment confirmed by the one successful transfer paying it."""
    states = payment_states([payment["payment_id"] for payment in payments])
    assert set(states.values()) == {"confirmed"}, states
    successes = [transfer for transfer in chain.transfers() if transfer["success"]]
    assert len(successes) == len(payments)
    assert sorted((t["payload"]["arguments"][1], t["payload"]["arguments"][2]) for t in successes) == \
        sorted((p["payout_address"], p["amount"]) for p in payments)


def settled(payments: list[dict[str, Any]]):
    return lambda: set(payment_states([p["payment_id"] for p in payments]).values()) == {"confirmed"}


def test_a_batch_is_claimed_signed_recorded_and_reported_in_three_round_trips(console, chain_server, chain, funded,
                                                                             tmp_path):
    payments = console(runs=5)
    worker, asked, transport = payment_worker(tmp_path, chain_server.url, WORKERS[0])
    effects = open_effects(worker)
    transport.requests = 0
    assert payment_session.carry_out(worker, effects) == f"{len(effects)} broadcast"
    assert transport.requests == 3  # claims, attempts with their signed bytes, reports
    assert asked.follows == [worker.signer.address]
    transport.requests = 0
    assert payer_follow.follow_payer(worker, worker.signer.address).startswith("settled")
    assert transport.requests == 2  # the attempts in flight, the observations with their evidence
    paid_once(chain, payments)
    assert asked.parked == []


def test_a_retried_message_reads_each_effect_again_and_works_it(console, chain_server, chain, funded, tmp_path):
    """The message's revisions are old (a claim that lapsed moved them): the batch claims at the current ones."""
    payments = console(runs=1)
    first, _, _ = payment_worker(tmp_path, chain_server.url, WORKERS[0])
    second, asked, _ = payment_worker(tmp_path, chain_server.url, WORKERS[1])
    listed = open_effects(first)
    claims = payment_session.claim_all(first, listed, payment_session.BatchReport())
    assert len(claims) == len(listed)
    time.sleep(CLAIM_TTL_MS / 1000 + 0.2)  # the first worker stalled; its claims lapsed without a signature
    assert payment_session.carry_out(second, listed) == f"{len(listed)} broadcast"
    Scheduler(second, asked).follow_until(settled(payments), timeout_secs=10)
    paid_once(chain, payments)


def test_a_full_window_signs_what_the_node_takes_and_hands_the_rest_back_for_any_worker(console, chain_server,
                                                                                     chain, funded, tmp_path):
    """A node takes so many transactions of one sender: the rest are handed back, not held under a claim another
    worker's retry could only find held."""
    payments = console(runs=2)
    worker, asked, _ = payment_worker(tmp_path, chain_server.url, WORKERS[0], PORTO_PAYER_WINDOW="4")
    other, _, _ = payment_worker(tmp_path, chain_server.url, WORKERS[1], PORTO_PAYER_WINDOW="4")
    chain.hold_transfers_after(0)  # nothing commits: the window cannot move
    summary = payment_session.carry_out(worker, open_effects(worker))
    assert summary == "4 broadcast, 6 handed back: the payer's window was full"
    assert [r.sequence_number for r in worker.journal.records()] == [0, 1, 2, 3]
    (again,) = asked.sends
    assert len(again) == 6 and {effect["status"] for effect in open_effects(worker)} == {"pending"}
    assert payment_session.carry_out(other, again) == "6 handed back: the payer's window was full"
    assert len(list(worker.journal.records())) == 4
    chain.release()
    while open_effects(worker):
        payment_session.carry_out(other, open_effects(worker))
        payer_follow.follow_payer(other, other.signer.address)
    paid_once(chain, payments)
    assert max(r.sequence_number for r in worker.journal.records()) == len(payments) - 1


def test_a_signature_a_dead_worker_journalled_is_recorded_within_five_seconds_of_the_first_follow_that_sees_it(
        console, chain_server, chain, funded, tmp_path):
    """The worker died right after the journal's fsync: its sequence is the lowest, every later transfer waits
    behind it on chain. The other worker's follower hands the gap to the repair, which records those bytes once
    the dead worker's claim lapses."""
    payments = console(runs=2)
    dead, _, _ = payment_worker(tmp_path, chain_server.url, WORKERS[0])
    alive, asked, _ = payment_worker(tmp_path, chain_server.url, WORKERS[1])
    effects = open_effects(dead)
    report = payment_session.BatchReport()
    claims = payment_session.claim_all(dead, effects[:1], report)
    _, (stranded,) = payment_session.sign_all(dead, claims, report)  # journalled; then the worker was killed
    payment_session.carry_out(alive, effects[1:])
    assert payer_follow.settle_once(alive, alive.signer.address).gap == stranded.record.sequence_number == 0
    seconds = Scheduler(alive, asked).follow_until(settled(payments), timeout_secs=15)
    assert seconds < 5
    paid_once(chain, payments)
    paid = [t["hash"] for t in chain.transfers()]
    assert paid[0] == stranded.record.transaction_hash  # those exact journalled bytes, at their sequence
    assert len(list(alive.journal.records())) == len(payments)  # nothing was signed twice


def test_a_worker_that_comes_back_repairs_its_own_stranded_signature_at_once(console, chain_server, chain, funded,
                                                                             tmp_path):
    payments = console(runs=1)
    worker, asked, _ = payment_worker(tmp_path, chain_server.url, WORKERS[0])
    effects = open_effects(worker)
    report = payment_session.BatchReport()
    payment_session.sign_all(worker, payment_session.claim_all(worker, effects, report), report)
    restarted, asked, _ = payment_worker(tmp_path, chain_server.url, WORKERS[0])  # its own claims, still live
    repaired = payer_repair.repair_payer(restarted, restarted.signer.address)
    assert (repaired.carried_out, repaired.lapses_in_ms, repaired.filled) == (len(effects), None, True)
    Scheduler(restarted, asked).follow_until(settled(payments), timeout_secs=5)
    paid_once(chain, payments)
    assert len(list(worker.journal.records())) == len(payments)


@pytest.mark.slow_kill
def test_payments_waiting_when_the_node_restarts_with_an_empty_mempool_are_confirmed_within_fifteen_seconds(
        console, tmp_path, signer):
    """Thirty transfers wait in the mempool behind a held one; the node is killed and comes back without them."""
    payments = console(runs=6)[:30]
    chain = ChainProcess(tmp_path / "chain", CHAIN_ID).start()
    try:
        chain.control("fund", asset=USDC, address=signer.address, amount=str(10**12))
        worker, asked, _ = payment_worker(tmp_path, chain.url, WORKERS[0])
        chain.control("hold", after=0)
        effects = [effect for effect in open_effects(worker) if effect["payload"]["payment_id"] in
                   {payment["payment_id"] for payment in payments}]
        assert payment_session.carry_out(worker, effects) == "30 broadcast"
        chain.kill()
        chain.start()
        chain.control("release")  # the hold was the test's, to keep them waiting; the node forgot them anyway
        restarted = time.monotonic()
        Scheduler(worker, asked).follow_until(settled(payments), timeout_secs=60)
        assert time.monotonic() - restarted < 15
        assert len(chain.transfers()) == len(payments) == len({t["hash"] for t in chain.transfers()})
        assert len(list(worker.journal.records())) == len(payments)  # rebroadcast, never signed again
    finally:
        chain.stop()


@pytest.mark.slow_kill
def test_a_chain_clock_ten_minutes_behind_then_ten_minutes_ahead_pays_every_payment_once(console, tmp_path, signer):
    payments = console(runs=2)
    chain = ChainProcess(tmp_path / "chain", CHAIN_ID, clock_offset_secs=-600).start()
    try:
        chain.control("fund", asset=USDC, address=signer.address, amount=str(10**12))
        worker, asked, _ = payment_worker(tmp_path, chain.url, WORKERS[0])
        effects = open_effects(worker)
        half = len(effects) // 2
        payment_session.carry_out(worker, effects[:half])
        first_half = [{"payment_id": effect["payload"]["payment_id"]} for effect in effects[:half]]
        Scheduler(worker, asked).follow_until(settled(first_half), timeout_secs=15)
        chain.control("advance", seconds=1_200)
        payment_session.carry_out(worker, open_effects(worker))
        Scheduler(worker, asked).follow_until(settled(payments), timeout_secs=15)
        assert asked.parked == []
        paid = [t for t in chain.transfers() if t["success"]]
        assert len(paid) == len(payments) == len(list(worker.journal.records()))
    finally:
        chain.stop()


def test_claims_are_leased_on_the_ledgers_clock_when_the_workers_runs_ten_minutes_behind(console, chain_server, chain,
                                                                                         funded, tmp_path,
                                                                                         monkeypatch):
    from porto_console.effects import ledger_api

    payments = console(runs=1)
    worker, asked, _ = payment_worker(tmp_path, chain_server.url, WORKERS[0])
    behind = time.time_ns() - 600 * 10**9
    monkeypatch.setattr(ledger_api.time, "time_ns", lambda: behind)
    worker.api.head()  # any answer names the ledger's clock
    payment_session.carry_out(worker, open_effects(worker))
    Scheduler(worker, asked).follow_until(settled(payments), timeout_secs=10)
    paid_once(chain, payments)
