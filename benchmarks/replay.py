"""Replay and verify: replay_export rebuilding a ledger from an export of the demo scenario."""

from __future__ import annotations

from pathlib import Path

from benchmarks.measure import Floor, interleaved, seconds
from benchmarks.report import Report
from benchmarks.workload import build_ledger, command_batch_bytes, scenario
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.storage.rocks import RocksStore

LISTENERS = 4_000
DAYS = 2
MAX_COMMANDS = 5_000
ROUNDS = 3


def run(report: Report, workdir: Path) -> None:
    floor = Floor(workdir, command_batch_bytes(report, workdir / "sample"))
    envelopes = scenario(listeners=LISTENERS, days=DAYS, limit=MAX_COMMANDS)
    build_ledger(report, workdir / "source", envelopes)
    with RocksStore(workdir / "source", read_only=True) as store:
        exported = export_store(store, workdir / "export")
    replays = []

    def one_round() -> float:
        target = workdir / f"replay-{len(replays)}"
        elapsed = seconds(lambda: replays.append(replay_export(workdir / "export", target)))
        return len(envelopes) / elapsed

    rounds = interleaved(ROUNDS, floor.rocksstore_rate, one_round)
    expected = (len(envelopes), exported["last_entry_hash"], exported["logical_state_hash"])
    report.check(all((r["sequence"], r["entry_hash"], r["logical_state_hash"]) == expected for r in replays),
                 f"{ROUNDS} replays of {len(envelopes)} commands reached the export's head and state hash")
    floor.verify(report)

    report.metric("commands", "commands in the export", len(envelopes), "commands")
    report.metric("commands_per_s", "replayed and verified commands per second", rounds.engine_rate, "commands/s")
    report.metric("raw_writes_per_s", "raw sync writes per second, same rounds", rounds.floor_rate, "writes/s")
    report.metric("ratio_to_raw", "replay / raw", rounds.ratio, "x")
