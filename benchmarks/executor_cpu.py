"""Executor CPU: process time per command type inside group commit (groups of 64), the fsync wait excluded.

Wall-clock rates on a shared disk swing with fsync time; CPU time does not, so
this is the figure to compare before and after a change to the command path.
Each command's ``execute`` (the rule, its rows, hashing, index upkeep, staging)
is timed with the leader thread's CPU clock; the group's synchronous write is
timed the same way and shared out over the group's commands.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import Future
from pathlib import Path

from benchmarks.measure import execute_cpu_timed
from benchmarks.report import Report
from benchmarks.workload import open_ledger, scenario
from ledger_engine.application.admission import admit

LISTENERS = 400
DAYS = 1
MAX_COMMANDS = 20_000  # the whole scenario: 12,560 commands, ImportFunding and AllocateListenerDay among them
GROUP = 64
ROUNDS = 3
SHOWN_AT_LEAST = 50  # command types with fewer commands are in the JSON only
TARGET_US = {"ImportFunding": 150}  # the executor's CPU per command, at most


def run(report: Report, workdir: Path) -> None:
    envelopes = scenario(listeners=LISTENERS, days=DAYS, limit=MAX_COMMANDS)
    per_round = [_one_round(report, workdir / f"ledger-{number}", envelopes) for number in range(ROUNDS)]
    counts = per_round[0][1]
    medians = {kind: statistics.median(cpu[kind] for cpu, _, _ in per_round) / counts[kind] for kind in counts}
    write_us = statistics.median(write for _, _, write in per_round) / len(envelopes)
    report.metric("rest_us", "the rest of the group (journal claims, tree, the write), CPU per command", write_us, "µs")
    for kind in sorted((kind for kind in counts if counts[kind] >= SHOWN_AT_LEAST), key=counts.get, reverse=True):
        report.metric(f"{kind}_us", f"{kind} ({counts[kind]:,} commands): execute CPU per command",
                      medians[kind], "µs")
    report.facts["execute_cpu_us_by_type"] = {kind: round(value, 1) for kind, value in medians.items()}
    for kind, limit in TARGET_US.items():
        report.target(f"{kind} execute CPU <= {limit} µs per command ({limit} / µs >= 1)", limit / medians[kind],
                      1.0, "x")
    report.facts["commands_by_type"] = dict(counts)


def _one_round(report: Report, path: Path, envelopes: list[dict]) -> tuple[dict[str, float], dict[str, int], float]:
    group_cpu, refused = 0.0, 0
    with open_ledger(path) as owner, execute_cpu_timed() as spent:
        for start in range(0, len(envelopes), GROUP):
            group = [(admit(envelope), Future(), time.perf_counter()) for envelope in envelopes[start:start + GROUP]]
            before = time.thread_time()
            owner.executor._commit(group)
            group_cpu += (time.thread_time() - before) * 1e6
            refused += sum(not future.result().accepted for _, future, _ in group)
        report.check(owner.head().sequence == len(envelopes),
                     f"all {len(envelopes)} scenario commands journalled")
    report.facts.setdefault("rejected_per_round", []).append(refused)  # the scenario's own refusals, if any
    return spent.us, spent.counts, group_cpu - sum(spent.us.values())
