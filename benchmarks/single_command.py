"""Single-command commits: LedgerOwner.submit one at a time, each waiting for its own fsync."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from benchmarks.measure import Floor, execute_cpu_timed
from benchmarks.report import Report
from benchmarks.workload import command_batch_bytes, measured_rounds, open_ledger, submit_each, warm_up

ROUNDS = 9
COMMANDS_PER_ROUND = 500
TARGET_RATIO = 0.6


def run(report: Report, workdir: Path) -> None:
    floor = Floor(workdir, command_batch_bytes(report, workdir / "sample"))
    with open_ledger(workdir / "ledger") as owner:
        warm_up(owner)
        # Each command here runs after the previous one's fsync wait, where a virtual machine's core may go cold.
        with execute_cpu_timed() as spent:
            rounds = measured_rounds(report, owner, floor, rounds=ROUNDS, per_round=COMMANDS_PER_ROUND,
                                     submit=partial(submit_each, owner))
        execute_us = sum(spent.us.values()) / sum(spent.counts.values())
    floor.verify(report)

    command_us, write_us = 1e6 / rounds.engine_rate, 1e6 / rounds.floor_rate
    report.metric("commands_per_s", "durable commands per second, one at a time", rounds.engine_rate, "commands/s")
    report.metric("raw_writes_per_s", "raw sync writes per second, same rounds", rounds.floor_rate, "writes/s")
    report.metric("ratio_to_raw", "single-command / raw", rounds.ratio, "x")
    report.metric("command_us", "one command, submit to durable outcome", command_us, "µs")
    report.metric("python_overhead_us", "per-command overhead over the raw write", command_us - write_us, "µs")
    report.metric("overhead_budget_us", f"the most overhead the {TARGET_RATIO} goal leaves over this raw write",
                  write_us / TARGET_RATIO - write_us, "µs")
    report.metric("execute_cpu_us", "the command's execute (rule, rows, index upkeep), leader thread CPU, one at a "
                  "time (executor_cpu has the same registrations in groups of 64)", execute_us, "µs")
    report.target(f"single-command >= {TARGET_RATIO:.0%} of the raw sync write rate", rounds.ratio, TARGET_RATIO, "x")
