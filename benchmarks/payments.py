"""Payments end to end: signed, recorded, broadcast and confirmed through Celery workers on the SIMULATED chain.

Setup (untimed): a ledger with approved payout runs, a console process that
owns it, a Redis broker, a SIMULATED chain on loopback. Then:

1. Throughput: every effect of the first runs is announced to the broker at
   once and ``celery worker`` processes carry them out; the clock stops when
   the ledger shows every payment confirmed.
2. Cost of the durable steps: the remaining payments run one at a time in
   this process through the same session code (claim, journal with fsync,
   evidence, RecordSignedAttempt, CompleteEffect, RecordTransferObservation),
   against a bare pipeline on the same chain that only signs, submits and
   waits for confirmation. The difference per payment is what durability costs.

Starts its own ``redis-server`` (Debian's package) in the work directory.
"""

from __future__ import annotations

import dataclasses
import gc
import statistics
import time
from pathlib import Path

from aptos_sdk.ed25519 import PrivateKey

from benchmarks.report import Report
from porto_console.effects import payment_session, stores
from porto_console.effects.aptos_rest import AptosRestClient
from porto_console.effects.chain import Fate, observe
from porto_console.effects.config import EffectsConfig
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.payment_session import PaymentWorker
from porto_console.effects.signer import Signer
from porto_console.effects.simulated_chain import SimulatedChain
from porto_console.effects.simulated_server import SimulatedChainServer
from porto_console.effects.transactions import TransferTerms
from tests.conftest import EnvelopeFactory
from tests.effects.conftest import CHAIN_ID, PAYER_KEY, USDC
from tests.effects.redis_server import RedisServer
from tests.effects.stack import Stack, wait_until
from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.world import RECIPIENTS, PayoutWorld

THROUGHPUT_RUNS = 16
SEQUENTIAL_RUNS = 4
WORKER_PROCESSES = 2
CONCURRENCY = 4


def run(report: Report, workdir: Path) -> None:
    server = SimulatedChainServer(SimulatedChain(chain_id=CHAIN_ID)).start()
    broker = RedisServer(workdir / "redis").start()
    try:
        payer = Signer(PrivateKey.from_str(PAYER_KEY, strict=False))
        server.chain.fund(USDC, payer.address, 10**15)
        stack = Stack(workdir, server.url, broker.url(0))
        runs = _approve_runs(stack, THROUGHPUT_RUNS + SEQUENTIAL_RUNS)
        gc.collect()
        stack.issue_credential("payments-1")
        stack.start_console()
        try:
            _throughput(report, stack, runs[:THROUGHPUT_RUNS])
            _durable_cost(report, stack, server, runs[THROUGHPUT_RUNS:])
        finally:
            stack.stop_all()
        paid = {t["hash"] for t in server.chain.transfers() if t["success"] and t["sender"] == payer.address}
        recorded = {"0x" + stack.payment(p["payment_id"])["paid_attempt_id"].removeprefix("tx-") for p in stack.approved}
        report.check(paid == recorded and len(paid) == len(stack.approved),
                     "the chain executed exactly one successful transfer per approved payment, the one the ledger records")
    finally:
        broker.stop()
        server.stop()


def _approve_runs(stack: Stack, count: int) -> list[list[dict]]:
    """``count`` approved runs, each paying every recipient one allocation line; their effects."""
    with stack.ledger() as owner, fixture_commands():
        envelopes = EnvelopeFactory()
        payouts = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup(days=count)
        statements = payouts.confirmed_statements()
        lines = {recipient: payouts.payable_line_ids(recipient) for recipient in RECIPIENTS}
        for number in range(count):
            run_id = f"run-{number:03d}"
            assert payouts.prepare(run_id, {r: [lines[r][number]] for r in RECIPIENTS}).accepted
            assert payouts.approve(run_id, statements).accepted
        stack.provision_worker(owner, envelopes)
        payments = [row["data"] for _, row in owner.scan("state", "payment/", limit=100_000)]
        effects = {key: {**row["data"], "revision": row["revision"]} for key, row in owner.scan("outbox", "", limit=100_000)}
    stack.approved = payments
    by_run: dict[str, list[dict]] = {}
    for payment in payments:
        by_run.setdefault(payment["run_id"], []).append(effects[payment["effect_id"]])
    return [by_run[run_id] for run_id in sorted(by_run)]


def _throughput(report: Report, stack: Stack, runs: list[list[dict]]) -> None:
    effects = [effect for run in runs for effect in run]
    for number in range(WORKER_PROCESSES):
        stack.start_worker("payments-1", process=f"payments-{number}", concurrency=CONCURRENCY)
    time.sleep(3)  # workers connected and idle before the clock starts
    started = time.perf_counter()
    for effect in effects:
        stack.send_effect(effect)
    wait_until(lambda: all(stack.payment(e["payload"]["payment_id"])["state"] == "confirmed" for e in effects),
               "every announced payment to be confirmed", timeout=600)
    elapsed = time.perf_counter() - started
    report.check(True, f"{len(effects)} payments confirmed in the ledger")
    report.metric("payments_per_s", f"payments confirmed per second ({WORKER_PROCESSES} workers x {CONCURRENCY})",
                  len(effects) / elapsed, "payments/s")
    report.metric("end_to_end_ms", "mean time per payment at that rate", 1000 * elapsed / len(effects), "ms")
    for name in list(stack.workers):
        stack.kill_worker(name)


def _durable_cost(report: Report, stack: Stack, server: SimulatedChainServer, runs: list[list[dict]]) -> None:
    config = dataclasses.replace(
        EffectsConfig.from_env(stack.worker_env("payments-1")), observe_window_secs=60)
    chain = AptosRestClient(server.url, simulated=True)
    worker = PaymentWorker(config, LedgerApi(stack.api_url, stack.tokens["payments-1"]), chain,
                           Signer.from_config(config), stores.payment_journal(config))
    durable = [_timed(lambda: payment_session.carry_out(worker, effect)) for run in runs for effect in run]
    bare_payer = Signer(PrivateKey.random())
    server.chain.fund(USDC, bare_payer.address, 10**15)
    bare = [_timed(lambda: _bare_payment(chain, bare_payer, config, number)) for number in range(len(durable))]
    report.metric("durable_payment_ms", "one payment through the durable session, alone", statistics.median(durable), "ms")
    report.metric("bare_payment_ms", "sign, submit, confirm with nothing recorded", statistics.median(bare), "ms")
    report.metric("durable_overhead_ms", "extra cost per payment of the durable steps",
                  statistics.median(durable) - statistics.median(bare), "ms")
    report.note("   durable steps: claim, journal append + fsync, two evidence stores, RecordSignedAttempt,"
                " CompleteEffect, RecordTransferObservation (each an internal API call and a synchronous commit)")


def _bare_payment(chain: AptosRestClient, payer: Signer, config: EffectsConfig, sequence: int) -> None:
    now = chain.ledger_state().timestamp_us // 1_000_000
    signed = payer.sign(TransferTerms(
        sender=payer.address, sequence_number=sequence, asset_metadata=config.usdc_metadata,
        recipient="0x" + "ee" * 32, amount=1, expiration_secs=now + config.transaction_ttl_secs,
        chain_id=config.chain_id, max_gas_amount=config.max_gas_amount, gas_unit_price=config.gas_unit_price))
    chain.submit(signed.signed_bytes)
    while observe(chain, signed).fate != Fate.SUCCESS:
        time.sleep(0.001)


def _timed(action) -> float:
    started = time.perf_counter()
    result = action()
    elapsed = 1000 * (time.perf_counter() - started)
    if isinstance(result, str) and result != "observed confirmed":
        raise AssertionError(f"a measured payment did not confirm: {result}")
    return elapsed
