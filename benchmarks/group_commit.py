"""Group commit: submit_async with 64 or 256 commands in flight, several sharing one fsync.

Besides the ratio to single raw writes (rounds interleaved), each depth is
compared with raw synchronous batches of ``max_group`` puts of the same size,
measured right after its rounds: the floor issue 15 sets group commit against.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from benchmarks.measure import Floor, WriteProbe
from benchmarks.report import Report
from benchmarks.workload import command_batch_bytes, measured_rounds, open_ledger, submit_windowed, warm_up

DEPTHS = (64, 256)
ROUNDS = 7
COMMANDS_PER_ROUND = 3_000
TARGET_RATE = 5_000
TARGET_BATCHED_RATIO = 0.25  # at depth 64, against raw synchronous batches of max_group puts
BATCHED_FLOOR_ROUNDS = 5


def run(report: Report, workdir: Path) -> None:
    floor = Floor(workdir, command_batch_bytes(report, workdir / "sample"))
    for depth in DEPTHS:
        _measure_depth(report, workdir / f"ledger-{depth}", floor, depth)
    floor.verify(report)


def _measure_depth(report: Report, path: Path, floor: Floor, depth: int) -> None:
    with open_ledger(path) as owner:
        warm_up(owner)
        with WriteProbe(owner.store) as probe:
            rounds = measured_rounds(report, owner, floor, rounds=ROUNDS, per_round=COMMANDS_PER_ROUND,
                                     submit=lambda batch: submit_windowed(owner, batch, depth))
        max_group = owner.executor.max_group
    batched = statistics.median(floor.batched_rate(max_group) for _ in range(BATCHED_FLOOR_ROUNDS))

    prefix, label = f"depth_{depth}_", f"depth {depth}:"
    report.metric(prefix + "commands_per_s", f"{label} durable commands per second", rounds.engine_rate, "commands/s")
    report.metric(prefix + "raw_writes_per_s", f"{label} raw sync writes per second, same rounds",
                  rounds.floor_rate, "writes/s")
    report.metric(prefix + "ratio_to_raw", f"{label} group commit / raw", rounds.ratio, "x")
    report.metric(prefix + "raw_batched_puts_per_s", f"{label} raw puts per second in sync batches of {max_group},"
                  " after the rounds", batched, "puts/s")
    report.metric(prefix + "ratio_to_raw_batched", f"{label} group commit / raw batches of {max_group}",
                  rounds.engine_rate / batched, "x")
    report.metric(prefix + "commands_per_fsync", f"{label} commands per fsync (max_group {max_group})",
                  ROUNDS * COMMANDS_PER_ROUND / len(probe.batches), "commands")
    report.target(f"depth {depth} group commit >= {TARGET_RATE:,} durable commands/s", rounds.engine_rate,
                  TARGET_RATE, "commands/s")
    if depth == max_group:
        report.metric(prefix + "command_us", f"{label} one command, wall time per command in the rounds",
                      1e6 / rounds.engine_rate, "µs")
        report.metric(prefix + "command_budget_us", f"{label} the most time per command the "
                      f"{TARGET_BATCHED_RATIO} goal allows", 1e6 / (TARGET_BATCHED_RATIO * batched), "µs")
        report.target(f"depth {depth} group commit >= {TARGET_BATCHED_RATIO} x raw sync batches of {max_group}",
                      rounds.engine_rate / batched, TARGET_BATCHED_RATIO, "x")
