"""Replay and verify: replay_export at 10^3, 10^4 and 10^5 commands, against group commit and in peak memory.

Each size's ledger is built by group commit (depth 256) from the registrations
the group-commit benchmark submits, and that build's rate is the one replay is
compared with, in the same run. Each replay runs in a child process and reports
its own peak resident memory (``VmHWM``, the high-water mark of the memory the
process was exec'd into). Not the ``ru_maxrss`` of ``wait4``: Linux carries the
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
    replayed, elapsed, peak_kib = replay_in_child(path / "export", path / "replayed")
    report.check((replayed["sequence"], replayed["entry_hash"], replayed["logical_state_hash"])
                 == (size, exported["last_entry_hash"], exported["logical_state_hash"]),
                 f"the replay of {size:,} commands reached the export's head and state hash")
    group_rate, replay_rate = size / built, size / elapsed
    prefix, label = f"n{size}_", f"{size:,} commands:"
    report.metric(prefix + "group_commit_per_s", f"{label} group commit (depth 256), building the ledger",
                  group_rate, "commands/s")
    report.metric(prefix + "replay_per_s", f"{label} replayed and verified", replay_rate, "commands/s")
    report.metric(prefix + "ratio_to_group_commit", f"{label} replay / group commit", replay_rate / group_rate, "x")
    report.metric(prefix + "peak_rss_mib", f"{label} replay process peak RSS", peak_kib / 1024, "MiB")
    report.target(f"{size:,} commands: replay >= {TARGET_RATIO} x group commit", replay_rate / group_rate,
                  TARGET_RATIO, "x")
    return peak_kib


def replay_in_child(export: Path, target: Path) -> tuple[dict[str, Any], float, int]:
    """Replay in a fresh process: its summary, the seconds replay_export took there, and its peak RSS in KiB."""
    child = subprocess.run([sys.executable, "-m", "benchmarks.replay", str(export), str(target)],
                           stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": _root_path()})
    if child.returncode != 0:
        raise RuntimeError(f"the replay child failed with status {child.returncode}")
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


def _replay_here(export: str, target: str) -> None:
    """The child: imports first (the parent had them loaded before it timed group commit), then the replay."""
    from ledger_engine.checkpoint.replay import replay_export
    from ledger_engine.projections.maintenance import IndexMaintainer

    IndexMaintainer()  # loads every projection and command module
    summaries = []
    elapsed = seconds(lambda: summaries.append(replay_export(export, target)))
    sys.stdout.buffer.write(orjson.dumps({"summary": summaries[0], "seconds": elapsed,
                                          "peak_rss_kib": own_peak_rss_kib()}))


if __name__ == "__main__":
    _replay_here(*sys.argv[1:3])
