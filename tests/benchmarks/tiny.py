"""Running a benchmark module on tiny counts, its module constants patched for the test."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from benchmarks.report import Report


def run_tiny(benchmark: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **constants: int) -> Report:
    """``benchmark.run`` with ``constants`` in place of its own; its checks raise if they fail."""
    for name, value in constants.items():
        assert hasattr(benchmark, name), name
        monkeypatch.setattr(benchmark, name, value)
    report = Report(benchmark.__name__.rsplit(".", 1)[-1], "tiny")
    benchmark.run(report, tmp_path)
    return report
