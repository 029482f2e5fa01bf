"""The allocation benchmark on tiny counts: every sampled day allocated and conserved, the policy's floor timed."""

from __future__ import annotations

from benchmarks import allocation
from tests.benchmarks.tiny import run_tiny


def test_a_tiny_sample_is_allocated_conserved_and_its_floor_timed(tmp_path, monkeypatch):
    report = run_tiny(allocation, tmp_path, monkeypatch, SAMPLE_LISTENERS=4, SAMPLE_DAYS=5, ROUNDS=5)

    assert "all 20 allocations accepted" in report.checks
    assert "the full conservation check finds nothing after 20 allocations" in report.checks
    assert report.metrics["lines_per_day"].value == 34
    plan, split = report.metrics["plan_us"].value, report.metrics["split_us"].value
    assert plan > 0 and split > 0
    assert report.metrics["split_floor_s"].value == allocation.POPULATION * split / 1e6
