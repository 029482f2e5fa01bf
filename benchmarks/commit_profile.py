"""Commit profile: cProfile of single-command submits, top entries by cumulative time.

A lone synchronous submit is led in the caller's own thread, so profiling that
thread covers admission, the rule, hashing, staging and the write. Should the
work move to another thread, it shows here as time waiting on a lock: a
regression in itself.
"""

from __future__ import annotations

import cProfile
import pstats
import sysconfig
from pathlib import Path

from benchmarks.report import Report
from benchmarks.workload import SAMPLE_COMMANDS, check_committed, next_registrations, open_ledger, warm_up

COMMANDS = 500
TOP = 15
# Longest first, so a file is named relative to the innermost root that holds it.
SOURCE_ROOTS = sorted({str(Path(__file__).resolve().parents[1]) + "/",
                       *(sysconfig.get_paths()[kind] + "/" for kind in ("purelib", "platlib", "stdlib"))},
                      key=len, reverse=True)


def run(report: Report, workdir: Path) -> None:
    profiler = cProfile.Profile()
    with open_ledger(workdir / "ledger") as owner:
        warm_up(owner)
        outcomes = [profiler.runcall(owner.submit, envelope) for envelope in next_registrations(owner, COMMANDS)]
        check_committed(report, owner, outcomes, SAMPLE_COMMANDS + COMMANDS)

    entries = _top_cumulative(pstats.Stats(profiler), TOP)
    report.facts["profile_top_cumulative"] = entries
    report.note(_render(entries, COMMANDS))


def _top_cumulative(stats: pstats.Stats, count: int) -> list[dict]:
    ranked = sorted(stats.stats.items(), key=lambda item: item[1][3], reverse=True)[:count]
    return [{"function": _name(function), "calls": calls, "tottime_s": round(tottime, 6), "cumtime_s": round(cumtime, 6)}
            for function, (_, calls, tottime, cumtime, _) in ranked]


def _name(function: tuple[str, int, str]) -> str:
    path, line, name = function
    for root in SOURCE_ROOTS:
        if path.startswith(root):
            path = path[len(root):]
            break
    return f"{path}:{line}({name})" if line else name


def _render(entries: list[dict], commands: int) -> str:
    lines = [f"   top {len(entries)} by cumulative time over {commands} submits (µs per command):",
             f"   {'cumulative':>10} {'own':>8} {'calls':>7}  function"]
    for entry in entries:
        lines.append(f"   {entry['cumtime_s'] * 1e6 / commands:>10.1f} {entry['tottime_s'] * 1e6 / commands:>8.1f}"
                     f" {entry['calls']:>7}  {entry['function']}")
    return "\n".join(lines)
