"""City freeze: a city's month allocated as finance asks for it, each day split on every core and frozen in chunks.

The population is the one the allocation goal names, whole: 10,000 listeners
by 30 days (300,000 listener-days of 20 works and 3 nodes, built by
``MoneyLedger``). Finance asks for the 30 days in one ``AllocateDay``; the
owner's day loop (``application/day_freeze.py``, docs/adr/0073) splits each day
on the day allocator's workers while it freezes the day before, one
``FreezeDayChunk`` per 2,500 listener-days. The time is the loop's, from the
request to the last day done.

Checks, on the whole population: every listener-day frozen once (the chunks'
listener-days add up to the city's, none refused), every budget's 30 slices
frozen to the unit and nothing left unallocated, the day lines adding up to
everything funded, a sample of listener-days of every day (their lines in the
chunks' stored bytes) line for line as the independent oracle
(``tests/money_allocation/oracle.py``) splits them, and ``CheckConservation``
clean. The owner's peak resident memory is measured over the loop alone
(``VmHWM``, reset before it). Then the ledger is exported and replayed in a
child process, which splits every frozen chunk again (``checkpoint/frozen_chunks.py``):
its rate, for the whole history (the build's commands too), is reported. The
run's last line states the result.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.allocation import BUDGET, MoneyLedger
from benchmarks.day_allocation import DAYS, LISTENERS, check_oracle
from benchmarks.measure import seconds
from benchmarks.replay import own_peak_rss_kib
from benchmarks.report import Report
from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application import day_freeze
from ledger_engine.application.pending import PendingBatch
from ledger_engine.checkpoint.export import export_store
from ledger_engine.domain.invariants import CONSERVATION_KEY
from ledger_engine.layout import STATE
from ledger_engine.storage.rocks import RocksStore
from tests.money_allocation.world import FINANCE, FIRST_DAY, fixture_commands

GOAL_S = 120
MEMORY_GOAL_MIB = 1024
REQUEST = "city-month"


def run(report: Report, workdir: Path) -> None:
    report.verdict = f"{report.name}: not finished"  # replaced once every check has passed
    started = time.perf_counter()
    evidence = EvidenceStore(workdir / "evidence")
    with MoneyLedger.open(workdir / "ledger", LISTENERS, DAYS) as ledger:
        report.metric("build_s", f"building the ledger: {LISTENERS:,} funded periods, {LISTENERS * DAYS:,} closed days",
                      time.perf_counter() - started, "s")
        world = ledger.world
        world.submit_ok("AllocateDay", {"request_id": REQUEST, "first_day": FIRST_DAY,
                                        "last_day": FIRST_DAY + DAYS - 1}, actor=FINANCE)
        _reset_peak_rss()
        workers = len(os.sched_getaffinity(0))
        records: list[dict[str, Any]] = []
        freeze_s = seconds(lambda: records.extend(
            day_freeze.run_requests(world.owner, evidence, [REQUEST], workers=workers)))
        peak_mib = own_peak_rss_kib() / 1024
        request = records[0]
        view = PendingBatch(world.owner.store)
        _check_frozen(report, view, request)
        check_oracle(report, view, _frozen_days(view, evidence))
        world.submit_ok("CheckConservation", {"check_id": "city-month"}, actor=FINANCE)
        conservation = view.get(STATE, CONSERVATION_KEY).data
        report.check(conservation["status"] == "clear",
                     f"CheckConservation clean over the frozen month ({conservation['mismatch_count']} mismatches)")
    population = LISTENERS * DAYS
    report.metric("freeze_s", f"the city's {DAYS} days split and frozen, {workers} workers", freeze_s, "s")
    report.metric("listener_days_per_s", "listener-days split and frozen per second", population / freeze_s, "days/s")
    report.metric("chunks", "chunks frozen", request["chunks_frozen"], "chunks")
    report.metric("owner_peak_rss_mib", "the owner's peak RSS while allocating the month", peak_mib, "MiB")
    report.target(f"the city split and frozen within {GOAL_S} s", GOAL_S / freeze_s, 1.0, "x")
    report.target(f"the owner's peak RSS under {MEMORY_GOAL_MIB} MiB", MEMORY_GOAL_MIB / peak_mib, 1.0, "x")
    _measure_replay(report, workdir, evidence, population)
    report.verdict = (f"city_freeze: {population:,} listener-days split and frozen in {freeze_s:.1f} s, exact, "
                      f"conservation clean, peak RSS {peak_mib:.0f} MiB")


def _check_frozen(report: Report, view: PendingBatch, request: dict[str, Any]) -> None:
    population = LISTENERS * DAYS
    report.check(request["status"] == "done" and not request["refused"] and
                 request["listener_days_frozen"] == population,
                 f"the request is done with all {population:,} listener-days frozen and none refused")
    budgets = [record.data for _, record in view.scan(STATE, "budget/")]
    report.check(len(budgets) == LISTENERS and all(budget.get("frozen") == str(BUDGET) and budget["unallocated"] == "0"
                                                   for budget in budgets),
                 f"every budget's {DAYS} slices frozen to the unit ({BUDGET:,}) and nothing left unallocated")
    day_lines = sum(int(record.data["amount"]) for _, record in view.scan(STATE, "day_chunk/"))
    report.check(day_lines == LISTENERS * BUDGET,
                 f"the chunks' day lines add up to the {LISTENERS * BUDGET:,} units funded")


def _frozen_days(view: PendingBatch, evidence: EvidenceStore) -> list[bytes]:
    """Each day's frozen lines as the chunks' stored bytes hold them, in chunk order."""
    by_day: dict[int, list[tuple[int, str]]] = {}
    for _, record in view.scan(STATE, "day_chunk/"):
        by_day.setdefault(record.data["day"], []).append((record.data["chunk"], record.data["hash"]))
    return [b"".join(evidence.get(digest) for _, digest in sorted(chunks)) for _, chunks in sorted(by_day.items())]


def _measure_replay(report: Report, workdir: Path, evidence: EvidenceStore, population: int) -> None:
    with RocksStore(workdir / "ledger", read_only=True) as store:
        exported = export_store(store, workdir / "export")
    child = subprocess.run([sys.executable, "-m", "benchmarks.city_freeze", str(workdir / "export"),
                            str(workdir / "replayed"), str(workdir / "evidence")], stdout=subprocess.PIPE,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    report.check(child.returncode == 0, f"the replay child succeeded (status {child.returncode})")
    answer = orjson.loads(child.stdout)
    replayed = answer["summary"]
    report.check((replayed["sequence"], replayed["logical_state_hash"]) ==
                 (exported["sequence"], exported["logical_state_hash"]),
                 "the replay, every frozen chunk split again, reached the export's head and state hash")
    report.metric("replay_s", "replaying the whole history, every chunk split again", answer["seconds"], "s")
    report.metric("replay_listener_days_per_s", "frozen listener-days per second of that replay",
                  population / answer["seconds"], "days/s")
    report.metric("replay_peak_rss_mib", "the replay process's peak RSS", answer["peak_rss_kib"] / 1024, "MiB")


def _reset_peak_rss() -> None:
    """Start this process's high-water mark (VmHWM) again from its resident memory now (Linux 4.0+)."""
    Path("/proc/self/clear_refs").write_text("5")


def _replay_here(export: str, destination: str, evidence: str) -> None:
    """The child: the history replayed from its export with its evidence, every frozen chunk split again."""
    from ledger_engine.checkpoint.replay import replay_export

    with fixture_commands():  # the build's records were written through the suite's stand-in command
        summaries = []
        elapsed = seconds(lambda: summaries.append(
            replay_export(Path(export), Path(destination), evidence=EvidenceStore(Path(evidence)))))
    sys.stdout.buffer.write(orjson.dumps({"summary": summaries[0], "seconds": elapsed,
                                          "peak_rss_kib": own_peak_rss_kib()}))


if __name__ == "__main__":
    _replay_here(*sys.argv[1:])
