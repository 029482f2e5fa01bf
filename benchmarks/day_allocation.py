"""Day allocation: the whole city's listener-days split into day artifacts by the day allocator, on every core.

The population is the one the allocation goal names, whole: 10,000 listeners
by 30 days (300,000 listener-days of 20 works and 3 nodes, built by
``MoneyLedger``). For each day the allocator reads the day's listener-days
outside the executor and splits them in worker processes into one artifact
(docs/adr/0069). This is the computing half of allocating the city, and
nothing here moves money: ``city_freeze`` measures the whole, split and frozen.

Checks: every listener-day is in its day's artifact, every budget's 30 day
slices add up to the budget to the unit, and a sample of listener-days of
every day matches the independent oracle (``tests/money_allocation/oracle.py``)
line for line. The same first days are also built with one worker, for the
speed-up on this machine in the same run.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path

import orjson

from benchmarks.allocation import BUDGET, MoneyLedger
from benchmarks.measure import seconds
from benchmarks.report import Report
from ledger_engine.application.day_allocator import DayAllocator
from ledger_engine.application.pending import PendingBatch
from ledger_engine.domain.schema.streaming import listener_day_key, rights_key
from ledger_engine.layout import STATE
from tests.money_allocation.oracle import london_1_lines, oracle_shape
from tests.money_allocation.world import FIRST_DAY

LISTENERS, DAYS = 10_000, 30
ONE_WORKER_DAYS = 3
ORACLE_SAMPLE_PER_DAY = 20
GOAL_S = 120


def run(report: Report, workdir: Path) -> None:
    started = time.perf_counter()
    with MoneyLedger.open(workdir / "ledger", LISTENERS, DAYS) as ledger:
        report.metric("build_s", f"building the ledger: {LISTENERS:,} funded periods, {LISTENERS * DAYS:,} closed days",
                      time.perf_counter() - started, "s")
        store = ledger.owner.store
        workers = len(os.sched_getaffinity(0))
        artifacts, alone = [], []
        with DayAllocator(workers=workers) as allocator:
            every_day_s = seconds(lambda: artifacts.extend(
                allocator.build(PendingBatch(store), day) for day in range(FIRST_DAY, FIRST_DAY + DAYS)))
        with DayAllocator(workers=1) as allocator:
            one_worker_s = seconds(lambda: alone.extend(
                allocator.build(PendingBatch(store), day) for day in range(FIRST_DAY, FIRST_DAY + ONE_WORKER_DAYS)))
        report.check([a.digest for a in alone] == [a.digest for a in artifacts[:ONE_WORKER_DAYS]],
                     f"the first {ONE_WORKER_DAYS} days' artifacts are byte-equal with {workers} workers and with one")
        _check_complete(report, artifacts)
        check_oracle(report, PendingBatch(store), [artifact.content for artifact in artifacts])

    population = LISTENERS * DAYS
    report.metric("listener_days", "listener-days in the artifacts", sum(a.totals.listener_days for a in artifacts), "days")
    report.metric("artifact_mib", "artifact bytes for the city", sum(len(a.content) for a in artifacts) / 2**20, "MiB")
    report.metric("city_s", f"computing the city's {DAYS} day artifacts, {workers} workers", every_day_s, "s")
    report.metric("listener_days_per_s", "listener-days split per second", population / every_day_s, "days/s")
    per_day_parallel = every_day_s / DAYS
    report.metric("speed_up", f"one worker / {workers} workers, same days (first {ONE_WORKER_DAYS})",
                  (one_worker_s / ONE_WORKER_DAYS) / per_day_parallel, "x")
    report.target(f"the city's artifacts computed within {GOAL_S} s (the split alone; city_freeze adds the freeze)",
                  GOAL_S / every_day_s, 1.0, "x")


def _check_complete(report: Report, artifacts) -> None:
    report.check(all(a.totals.listener_days == LISTENERS and not a.skipped for a in artifacts),
                 f"every day's artifact holds all {LISTENERS:,} listener-days and skips none")
    by_budget: dict[str, int] = defaultdict(int)
    for artifact in artifacts:
        for budget_id, amount in artifact.totals.by_budget.items():
            by_budget[budget_id] += amount
    report.check(len(by_budget) == LISTENERS and set(by_budget.values()) == {BUDGET},
                 f"every budget's {DAYS} day slices add up to its {BUDGET:,} units exactly")
    recipients = sum(sum(a.totals.by_recipient.values()) for a in artifacts)
    report.check(recipients == LISTENERS * BUDGET, f"recipients' totals add up to the {LISTENERS * BUDGET:,} units funded")


def check_oracle(report: Report, view: PendingBatch, days: list[bytes]) -> None:
    """A sample of each day's artifact lines (``days``: one day's bytes each) line for line against the oracle."""
    sampled, differing = 0, []
    for content in days:
        lines = content.splitlines()
        step = max(1, len(lines) // ORACLE_SAMPLE_PER_DAY)
        for raw in lines[::step][:ORACLE_SAMPLE_PER_DAY]:
            line = orjson.loads(raw)
            listener_day = view.get(STATE, listener_day_key(line["listener_id"], line["day"])).data
            works = [{**work, "splits": _splits(view, work)} for work in listener_day["works"]]
            if [oracle_shape(fields) for fields in line["lines"]] != london_1_lines(
                    int(line["amount"]), works, listener_day["nodes"]):
                differing.append(f"{line['listener_id']}/{line['day']}")
            sampled += 1
    report.check(not differing, f"{sampled} sampled listener-days ({ORACLE_SAMPLE_PER_DAY} a day) match the oracle "
                                "line for line" + (f" (first differing: {differing[0]})" if differing else ""))


def _splits(view: PendingBatch, work: dict) -> dict[str, int]:
    rights = view.get(STATE, rights_key(work["work_id"], work["rights_version"])).data
    return {recipient["recipient_id"]: recipient["split_bps"] for recipient in rights["recipients"]}
