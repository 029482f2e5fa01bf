"""Export and hash: export_store and logical_state_hash over a stopped ledger with many rows."""

from __future__ import annotations

import shutil
from pathlib import Path

from benchmarks.measure import Floor, interleaved, seconds
from benchmarks.report import Report
from benchmarks.workload import build_ledger, command_batch_bytes, registrations
from ledger_engine.storage.digest import logical_state_hash
from ledger_engine.checkpoint.export import JOURNAL_FILE, ROWS_FILE, export_store
from ledger_engine.storage.rocks import RocksStore

COMMANDS = 20_000
ROUNDS = 5


def run(report: Report, workdir: Path) -> None:
    floor = Floor(workdir, command_batch_bytes(report, workdir / "sample"))
    build_ledger(report, workdir / "ledger", registrations(COMMANDS))
    exports, hashes = [], []

    with RocksStore(workdir / "ledger", read_only=True) as store:
        def export_round() -> float:
            destination = workdir / "export"
            elapsed = seconds(lambda: exports.append(export_store(store, destination)))
            shutil.rmtree(destination)
            return exports[-1]["files"][ROWS_FILE]["lines"] / elapsed

        def hash_round() -> float:
            elapsed = seconds(lambda: hashes.append(logical_state_hash(store)))
            return exports[0]["files"][ROWS_FILE]["lines"] / elapsed

        exporting = interleaved(ROUNDS, floor.rocksstore_rate, export_round)
        hashing = interleaved(ROUNDS, floor.rocksstore_rate, hash_round)

    first = exports[0]
    rows = first["files"][ROWS_FILE]["lines"]
    report.check(all(e == first for e in exports), f"{ROUNDS} exports are identical")
    report.check(first["sequence"] == COMMANDS and first["files"][JOURNAL_FILE]["lines"] == COMMANDS,
                 f"the export holds all {COMMANDS} journal entries")
    report.check(rows > 2 * COMMANDS, f"{rows} logical rows exported, more than two per command")
    report.check(set(hashes) == {first["logical_state_hash"]},
                 "logical_state_hash equals the digest the export computed while writing")
    floor.verify(report)

    total_bytes = sum(item["bytes"] for item in first["files"].values())
    report.metric("rows", "logical rows", rows, "rows")
    report.metric("export_bytes", "export size", total_bytes / 1e6, "MB")
    report.metric("export_rows_per_s", "export_store rows per second", exporting.engine_rate, "rows/s")
    report.metric("export_ratio_to_raw", "export rows/s / raw writes/s", exporting.ratio, "x")
    report.metric("hash_rows_per_s", "logical_state_hash rows per second", hashing.engine_rate, "rows/s")
    report.metric("hash_ratio_to_raw", "hash rows/s / raw writes/s", hashing.ratio, "x")
    report.metric("raw_writes_per_s", "raw sync writes per second, same rounds", exporting.floor_rate, "writes/s")
