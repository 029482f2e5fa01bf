"""Payments: 1,000 paid end to end through real Celery workers on the SIMULATED chain, with 1, 2, 4 and 8 workers.

Setup (untimed, once): a ledger with 1,000 approved payments (200 payout runs
paying five recipients each, from seven listeners' allocations) and eight
worker actors. For each number of workers, in turn: a copy of that ledger
owned by a fresh console, a fresh SIMULATED chain process, broker and
signed-payment journal, and that many ``celery worker`` processes (one slot
each, their own actor and credential) connected and idle, and the backup the
console takes as it starts finished (its keeper's next look, which runs restic,
comes after the run: ``PORTO_BACKUP_TICK_SECS`` 600). Then every payment
is announced as the owner announces an approved run (batches of 25 on the
broker) and the clock runs until the ledger shows every one confirmed.

Printed for each count: payments per second, and per payment the ledger
commands journalled, the HTTP requests the console served and the CPU each
process spent (console with its ledger owner, workers, chain, broker, and this
process's own polling), from the kernel's counters of each process group.
Targets: at least 40 payments per second with 4 workers, and more with 4 than
with 1.

``PORTO_BENCH_PAYMENTS`` (default 1,000) and ``PORTO_BENCH_WORKERS`` (default
``1,2,4,8``) make a smaller run, for profiling; the targets are judged only on
the defaults' counts that ran.

Starts its own ``redis-server`` (Debian's package) in the work directory.
"""

from __future__ import annotations

import gc
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from aptos_sdk.ed25519 import PrivateKey

from benchmarks.report import Report
from porto_console.effects.celery_app import PAYMENTS
from porto_console.effects.delivery import PAYMENT_BATCH
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.signer import Signer
from tests.conftest import EnvelopeFactory
from tests.effects.chain_process import ChainProcess
from tests.effects.conftest import CHAIN_ID, PAYER_KEY, USDC
from tests.effects.redis_server import RedisServer
from tests.effects.stack import WORKER_ROLES, Stack, provision_worker_actors, wait_until
from tests.money_allocation.world import FIRST_DAY, MoneyWorld, fixture_commands
from tests.money_payouts.world import NODES, RECIPIENTS, WORKS, PayoutWorld

PAYMENTS_TO_MAKE = int(os.environ.get("PORTO_BENCH_PAYMENTS", "1000"))
WORKER_COUNTS = tuple(int(count) for count in os.environ.get("PORTO_BENCH_WORKERS", "1,2,4,8").split(","))
LISTENERS = 7
DAYS = 29  # a listener's 30-day period; 7 x 29 listener-days give each recipient 203 lines
GOAL_PER_SECOND = 40
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BACKUP_TICK_VARIABLE, BACKUP_TICK_SECS = "PORTO_BACKUP_TICK_SECS", 600


def run(report: Report, workdir: Path) -> None:
    built = workdir / "built"
    payment_ids = _approve(built, PAYMENTS_TO_MAKE // len(RECIPIENTS))
    report.check(len(payment_ids) == PAYMENTS_TO_MAKE, f"{PAYMENTS_TO_MAKE} payments approved")
    rates = {}
    for workers in WORKER_COUNTS:
        paid = _pay(built, workdir / f"workers-{workers}", payment_ids, workers)
        rates[workers] = paid.rate
        report.metric(f"per_second_{workers}", f"payments per second, {workers} worker(s)", paid.rate, "payments/s")
        report.metric(f"commands_{workers}", f"ledger commands per payment, {workers} worker(s)", paid.commands,
                      "commands")
        report.metric(f"requests_{workers}", f"HTTP requests per payment, {workers} worker(s)", paid.requests,
                      "requests")
        for role, cpu_ms in paid.cpu_ms.items():
            report.metric(f"cpu_ms_{role}_{workers}", f"CPU ms per payment, {role}, {workers} worker(s)", cpu_ms,
                          "ms")
    if 4 in rates:
        report.target(f"at least {GOAL_PER_SECOND} payments per second with 4 workers", rates[4], GOAL_PER_SECOND,
                      "payments/s")
    if 1 in rates and 4 in rates:
        report.target("4 workers pay faster than 1 (ratio)", rates[4] / rates[1], 1.0, "x")
    report.note(f"   {PAYMENTS_TO_MAKE} payments each time; each worker one process with one slot and its own actor")


def _approve(directory: Path, runs: int) -> list[str]:
    """``runs`` approved payout runs paying every recipient one allocation line, and the workers' actors."""
    with _owner(directory) as owner, fixture_commands():
        envelopes = EnvelopeFactory()
        payouts = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup(days=2)
        money = payouts.money
        assert money.lot("lot-bench", 30_000_000).accepted
        for listener in range(LISTENERS):
            period, budget, listener_id = f"bench-period-{listener}", f"bench-budget-{listener}", f"bench-{listener}"
            money.period(period, listener_id, days=30)
            money.fund(budget, period, {"lot-bench": 3_000_000})
            for day in range(FIRST_DAY, FIRST_DAY + DAYS):
                money.closed_day(listener_id, day, period, WORKS, NODES)
                assert money.allocate(listener_id, day, budget).accepted
        statements = payouts.confirmed_statements()
        lines = {recipient: payouts.payable_line_ids(recipient) for recipient in RECIPIENTS}
        for number in range(runs):
            run_id = f"bench-{number:03d}"
            assert payouts.prepare(run_id, {r: [lines[r][number]] for r in RECIPIENTS}).accepted
            assert payouts.approve(run_id, statements).accepted
        for number in range(max(WORKER_COUNTS)):
            provision_worker_actors(owner, envelopes, _actor(number), WORKER_ROLES)  # and its observer
        ids = [row["data"]["payment_id"] for _, row in owner.scan("state", "payment/", limit=100_000)
               if row["data"]["run_id"].startswith("bench-")]
    gc.collect()
    return ids


def _owner(directory: Path):
    from ledger_engine.application.owner import LedgerOwner
    from tests.effects.stack import GENESIS

    return LedgerOwner.open(directory / "ledger", genesis=GENESIS)


def _actor(number: int) -> str:
    return f"bench-payments-{number + 1}"


@dataclass(frozen=True, slots=True)
class Paid:
    """One worker count's run: payments a second and, per payment, commands, requests and CPU by process."""

    rate: float
    commands: float
    requests: float
    cpu_ms: dict[str, float]


def _pay(built: Path, root: Path, payment_ids: list[str], workers: int) -> Paid:
    """Pay every payment with ``workers`` workers on a copy of the built ledger."""
    shutil.copytree(built, root)
    broker = RedisServer(root / "redis").start()
    chain = ChainProcess(root / "chain", CHAIN_ID).start()
    stack = Stack(root, chain.url, broker.url(0))
    try:
        chain.control("fund", asset=USDC, address=Signer(PrivateKey.from_str(PAYER_KEY, strict=False)).address,
                      amount=str(10**15))
        for number in range(workers):
            stack.issue_credential(f"bench-{number}", _actor(number))
        _start_console(stack)
        api = LedgerApi(stack.api_url, stack.tokens["bench-0"])
        effects = [effect for effect in api.effects("pending") if effect["payload"]["payment_id"] in set(payment_ids)]
        for number in range(workers):
            stack.start_worker(f"bench-{number}")
        _wait_for_workers(stack, workers)
        _wait_for_first_backup(stack)
        head, requests = api.head()["sequence"], _requests(stack)
        groups = {"console": [stack.console.pid], "workers": [process.pid for process in stack.workers.values()],
                  "chain": [chain.process.pid], "broker": [broker.process.pid]}
        os.sync()  # what setting up wrote (the ledger's copy, the first backup) is not flushed by the console's syncs
        cpu_before, started = _cpu_secs(groups), time.perf_counter()
        for start in range(0, len(effects), PAYMENT_BATCH):
            stack.broker.send_task("porto.effects.payment", args=[effects[start:start + PAYMENT_BATCH]],
                                   queue=PAYMENTS)
        _wait_until_paid(stack, chain, payment_ids)
        elapsed, cpu_after = time.perf_counter() - started, _cpu_secs(groups)
        commands = api.head()["sequence"] - head
        served = _requests(stack) - requests
        api.close()
        count = len(payment_ids)
        return Paid(count / elapsed, commands / count, served / count,
                    {role: (cpu_after[role] - cpu_before[role]) * 1000 / count for role in cpu_after})
    finally:
        stack.stop_all()
        chain.stop()
        broker.stop()


def _cpu_secs(groups: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds (user and system) so far of every process in each role's process groups, and of this process."""
    by_group: dict[int, float] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while the list was read
            continue
        group, ticks = int(fields[2]), int(fields[11]) + int(fields[12])  # pgrp, utime, stime
        by_group[group] = by_group.get(group, 0.0) + ticks / CLOCK_TICKS
    spent = {role: sum(by_group.get(group, 0.0) for group in pids) for role, pids in groups.items()}
    own = os.times()
    return {**spent, "benchmark": own.user + own.system}


def _wait_for_workers(stack: Stack, workers: int) -> None:
    """Every worker process has said it is ready (``celery@... ready``) in its log."""
    wait_until(lambda: all("ready." in (stack.root / f"bench-{number}.log").read_text()
                           for number in range(workers)), "the workers to connect", timeout=120)


def _start_console(stack: Stack) -> None:
    """The console, whose backup keeper looks at the repository once a run, not every 30 s: each look runs restic
    twice, about a second of CPU (the repository key's scrypt) that would land in one worker count's window and not
    another's."""
    before = os.environ.get(BACKUP_TICK_VARIABLE)
    os.environ[BACKUP_TICK_VARIABLE] = str(BACKUP_TICK_SECS)
    try:
        stack.start_console()
    finally:
        if before is None:
            del os.environ[BACKUP_TICK_VARIABLE]
        else:
            os.environ[BACKUP_TICK_VARIABLE] = before


def _wait_for_first_backup(stack: Stack) -> None:
    """The console takes a backup as it starts (then one every ``PORTO_BACKUP_INTERVAL_SECS``, longer than a run):
    the clock starts after it, so its CPU is not counted against whichever worker count it happened to overlap."""
    wait_until(lambda: "backup counted" in (stack.root / "console.log").read_text(errors="replace"),
               "the console's first backup", timeout=300)


def _wait_until_paid(stack: Stack, chain: ChainProcess, payment_ids: list[str]) -> None:
    payer = Signer(PrivateKey.from_str(PAYER_KEY, strict=False)).address
    # One client for every look: a fresh one per request costs about 20 ms of CPU (its TLS context), which the
    # processes being measured would lose.
    with httpx.Client(base_url=chain.url, timeout=5) as node:
        wait_until(lambda: _sequence(node, payer) >= len(payment_ids), "the chain to execute every transfer",
                   timeout=1_800)
    wait_until(lambda: all(p["state"] == "confirmed" for p in stack.payments(payment_ids)),
               "the ledger to confirm every payment", timeout=600)


def _sequence(node: httpx.Client, address: str) -> int:
    answer = node.get(f"/v1/accounts/{address}")
    return int(answer.json()["sequence_number"]) if answer.status_code == 200 else 0


def _requests(stack: Stack) -> int:
    """Requests the console served to the internal API so far, from its request log."""
    log = stack.root / "console.log"
    return log.read_text(errors="replace").count('"path":"/internal/') if log.exists() else 0
