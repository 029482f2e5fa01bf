"""Replay, verify and restore at 10^3, 10^4 and 10^5 commands, against group commit and in peak memory.

Each size's ledger is built by group commit (depth 256) from the registrations
the group-commit benchmark submits, and that build's rate is the one replay,
both verifications and restore are compared with, in the same run:
``replay_export``, an auditor's ``verify_export`` of the export,
``porto-ledger verify``'s ``verify_directory`` of the stopped ledger (export,
check, indexes and journal tree), and ``restore`` of a backup of it. Each runs
in a child process, which reports its own peak resident memory (``VmHWM``, the high-water mark of the memory the process was exec'd
into). Not the ``ru_maxrss`` of ``wait4``: Linux carries the
forked copy of the parent's memory into it, so it measured the parent, whose
size grows with the ledger it just built (docs/adr/0068).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from benchmarks.measure import seconds
from benchmarks.report import Report
from benchmarks.workload import build_ledger, registrations
from ledger_engine.checkpoint.backup import backup
from ledger_engine.checkpoint.export import export_store
from ledger_engine.storage.rocks import RocksStore

SIZES = (1_000, 10_000, 100_000)
TARGET_RATIO = 2.0
MAX_MEMORY_GROWTH = 1.5


def run(report: Report, workdir: Path) -> None:
    peaks = [_measure(report, workdir / f"commands-{size}", size) for size in SIZES]
    growth = peaks[-1] / peaks[0]
    report.metric("peak_rss_growth", f"peak RSS at {SIZES[-1]:,} / at {SIZES[0]:,} commands", growth, "x")
    report.metric("peak_rss_growth_last", f"peak RSS at {SIZES[-1]:,} / at {SIZES[-2]:,} commands",
                  peaks[-1] / peaks[-2], "x")
    report.target(f"memory flat: peak RSS at {SIZES[0]:,} / at {SIZES[-1]:,} commands >= 1 / {MAX_MEMORY_GROWTH}",
                  1 / growth, 1 / MAX_MEMORY_GROWTH, "x")


def _measure(report: Report, path: Path, size: int) -> float:
    envelopes = registrations(size)
    built = seconds(lambda: build_ledger(report, path / "source", envelopes))
    with RocksStore(path / "source", read_only=True) as store:
        exported = export_store(store, path / "export")
    head = (size, exported["last_entry_hash"], exported["logical_state_hash"])
    prefix, label = f"n{size}_", f"{size:,} commands:"
    group_rate = size / built
    report.metric(prefix + "group_commit_per_s", f"{label} group commit (depth 256), building the ledger",
                  group_rate, "commands/s")
    replayed, elapsed, peak_kib = in_child("replay", path / "export", path / "replayed")
    report.check((replayed["sequence"], replayed["entry_hash"], replayed["logical_state_hash"]) == head,
                 f"the replay of {size:,} commands reached the export's head and state hash")
    _against_group_commit(report, size, "replay", "replayed and verified", elapsed, group_rate)
    report.metric(prefix + "peak_rss_mib", f"{label} replay process peak RSS", peak_kib / 1024, "MiB")
    verified, elapsed, _ = in_child("verify-export", path / "export")
    report.check((verified["sequence"], verified["last_entry_hash"], verified["logical_state_hash"]) == head,
                 f"verify-export of {size:,} commands verified the export's head and state hash")
    _against_group_commit(report, size, "verify_export", "the export verified (verify-export)", elapsed, group_rate)
    checked, elapsed, _ = in_child("verify", path / "source")
    report.check((checked["sequence"], checked["entry_hash"], checked["logical_state_hash"]) == head,
                 f"verify of the stopped ledger of {size:,} commands verified its head and state hash")
    _against_group_commit(report, size, "verify", "the stopped ledger verified (verify)", elapsed, group_rate)
    _measure_restore(report, path, size, head, group_rate)
    return peak_kib


def _measure_restore(report: Report, path: Path, size: int, head: tuple, group_rate: float) -> None:
    """A restore rebuilds the ledger from the backup's export and verifies it (ADR 0077): about a replay."""
    with RocksStore(path / "source") as store:
        backup(store.checkpoint, path / "source", path / "backup")
    restored, elapsed, _ = in_child("restore", path / "backup", path / "restored")
    report.check((restored["sequence"], restored["entry_hash"], restored["logical_state_hash"]) == head,
                 f"the restore of {size:,} commands reached the backup's head and state hash")
    rate = size / elapsed
    report.metric(f"n{size}_restore_per_s", f"{size:,} commands: restored (porto-ledger restore)", rate, "commands/s")
    report.metric(f"n{size}_restore_ratio_to_group_commit", f"{size:,} commands: restore / group commit",
                  rate / group_rate, "x")


def _against_group_commit(report: Report, size: int, key: str, label: str, elapsed: float, group_rate: float) -> None:
    rate = size / elapsed
    report.metric(f"n{size}_{key}_per_s", f"{size:,} commands: {label}", rate, "commands/s")
    report.metric(f"n{size}_{key}_ratio_to_group_commit", f"{size:,} commands: {key} / group commit",
                  rate / group_rate, "x")
    report.target(f"{size:,} commands: {key} >= {TARGET_RATIO} x group commit", rate / group_rate, TARGET_RATIO, "x")


def in_child(verb: str, *paths: Path) -> tuple[dict[str, Any], float, int]:
    """``verb`` in a fresh process: its result, the seconds it took there, and the child's peak RSS in KiB."""
    child = subprocess.run([sys.executable, "-m", "benchmarks.replay", verb, *map(str, paths)],
                           stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": _root_path()})
    if child.returncode != 0:
        raise RuntimeError(f"the {verb} child failed with status {child.returncode}")
    answer = orjson.loads(child.stdout)
    return answer["summary"], answer["seconds"], answer["peak_rss_kib"]


def own_peak_rss_kib() -> int:
    """This process's high-water resident memory since it was exec'd (VmHWM), in KiB."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1])


def _root_path() -> str:
    root = str(Path(__file__).resolve().parent.parent)
    return os.pathsep.join(part for part in (root, os.environ.get("PYTHONPATH")) if part)


def _here(verb: str, *paths: str) -> None:
    """The child: imports first (the parent had them loaded before it timed group commit), then ``verb``."""
    from ledger_engine.checkpoint.backup import restore
    from ledger_engine.checkpoint.integrity import verify_directory
    from ledger_engine.checkpoint.replay import replay_export
    from ledger_engine.checkpoint.verify import verify_export
    from ledger_engine.projections.maintenance import IndexMaintainer

    IndexMaintainer()  # loads every projection and command module
    work = {"replay": replay_export, "verify-export": verify_export, "verify": verify_directory,
            "restore": restore}[verb]
    summaries = []
    elapsed = seconds(lambda: summaries.append(work(*paths)))
    sys.stdout.buffer.write(orjson.dumps({"summary": summaries[0], "seconds": elapsed,
                                          "peak_rss_kib": own_peak_rss_kib()}))


if __name__ == "__main__":
    _here(*sys.argv[1:])
