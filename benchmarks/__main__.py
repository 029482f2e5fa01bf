"""``python -m benchmarks [NAME ...]``: run the named benchmarks (all without a name).

Prints one table per benchmark and writes every figure, with the machine it
ran on, to bench-results/latest.json. Exits 1 if any benchmark failed its own
checks or crashed, 2 for an unknown name.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import tempfile
import time
import traceback
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

import orjson

from benchmarks import BENCHMARKS
from benchmarks.report import Report

RESULTS = Path(__file__).resolve().parent.parent / "bench-results" / "latest.json"


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def filesystem_of(path: str) -> str:
    """The type of the longest mount point holding ``path``: fsync costs differ wildly between them."""
    best, kind = "", "unknown"
    for line in Path("/proc/mounts").read_text().splitlines():
        mount_point, fs_type = line.split()[1:3]
        inside = path == mount_point or path.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) > len(best):
            best, kind = mount_point, fs_type
    return kind


def machine() -> dict[str, Any]:
    scratch = tempfile.gettempdir()
    return {
        "nproc": len(os.sched_getaffinity(0)),
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        "rocksdict": version("rocksdict"),
        "scratch_dir": scratch,
        "scratch_filesystem": filesystem_of(os.path.realpath(scratch)),
        "load_average_at_start": os.getloadavg()[0],
    }


def describe(date: str, host: dict[str, Any]) -> str:
    return (f"{date}: {host['nproc']} x {host['cpu_model']}, Python {host['python']}, rocksdict {host['rocksdict']},"
            f" scratch {host['scratch_dir']} ({host['scratch_filesystem']}), load {host['load_average_at_start']:.2f}")


def run_one(name: str) -> Report:
    module = importlib.import_module(f"benchmarks.{name}")
    report = Report(name, module.__doc__.strip().splitlines()[0])
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"porto-bench-{name}-") as workdir:
        try:
            module.run(report, Path(workdir))
        except Exception as error:  # reported and counted; the other benchmarks still run
            traceback.print_exc()
            report.error = f"{type(error).__name__}: {error}"
    report.seconds = time.perf_counter() - started
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"one of: {', '.join(BENCHMARKS)}")
    names = parser.parse_args(argv).names or list(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")

    results: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                               "machine": machine(), "benchmarks": {}}
    print(describe(results["date"], results["machine"]), flush=True)
    reports = {}
    for name in names:
        report = reports[name] = run_one(name)
        print(report.table(), flush=True)
        results["benchmarks"][name] = report.as_json()

    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
    print(f"results: {RESULTS}")
    for report in reports.values():
        if report.verdict:
            print(f"{report.name}: failed: {report.error}" if report.error else report.verdict)
    return 1 if any(r["error"] for r in results["benchmarks"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
