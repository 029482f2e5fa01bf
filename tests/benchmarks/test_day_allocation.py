"""The day allocation benchmark on a tiny city: every check it makes holds, and its figures are reported."""

from __future__ import annotations

from benchmarks import day_allocation
from tests.benchmarks.tiny import run_tiny


def test_a_tiny_city_is_split_completely_exactly_and_alike_on_one_worker_and_on_several(tmp_path, monkeypatch):
    report = run_tiny(day_allocation, tmp_path, monkeypatch, LISTENERS=3, ONE_WORKER_DAYS=2, ORACLE_SAMPLE_PER_DAY=2)

    assert "every day's artifact holds all 3 listener-days and skips none" in report.checks
    assert "every budget's 30 day slices add up to its 30,000,000 units exactly" in report.checks
    assert "60 sampled listener-days (2 a day) match the oracle line for line" in report.checks
    assert any(check.startswith("the first 2 days' artifacts are byte-equal") for check in report.checks)
    assert report.metrics["listener_days"].value == 90
    assert report.targets[0].measured > 0
