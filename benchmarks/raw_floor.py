"""Raw floor: synchronous RocksDB batches as large as one command's, via RocksStore.write and rocksdict."""

from __future__ import annotations

from pathlib import Path

from benchmarks.measure import Floor, interleaved
from benchmarks.report import Report
from benchmarks.workload import command_batch_bytes

ROUNDS = 7


def run(report: Report, workdir: Path) -> None:
    floor = Floor(workdir, command_batch_bytes(report, workdir / "sample"))
    rounds = interleaved(ROUNDS, floor.rocksdict_rate, floor.rocksstore_rate)
    report.metric("rocksdict_writes_per_s", "rocksdict sync batches per second", rounds.floor_rate, "writes/s")
    report.metric("rocksstore_writes_per_s", "RocksStore.write sync batches per second", rounds.engine_rate, "writes/s")
    report.metric("rocksstore_ratio", "RocksStore.write / rocksdict", rounds.ratio, "x")
    report.metric("rocksstore_write_us", "one RocksStore.write", 1e6 / rounds.engine_rate, "µs")
    floor.verify(report)
