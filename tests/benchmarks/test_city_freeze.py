"""The city freeze benchmark on a tiny city: every check it makes holds, a wrong figure fails it, its last line reads as stated."""

from __future__ import annotations

import re

import pytest

from benchmarks import city_freeze
from benchmarks.report import CheckFailed
from tests.benchmarks.tiny import run_tiny

VERDICT = re.compile(r"^city_freeze: 90 listener-days split and frozen in \d+\.\d s, exact, conservation clean, "
                     r"peak RSS \d+ MiB$")


def test_a_tiny_city_is_split_frozen_checked_and_replayed(tmp_path, monkeypatch):
    report = run_tiny(city_freeze, tmp_path, monkeypatch, LISTENERS=3)

    assert "the request is done with all 90 listener-days frozen and none refused" in report.checks
    assert "every budget's 30 slices frozen to the unit (30,000,000) and nothing left unallocated" in report.checks
    assert "the chunks' day lines add up to the 90,000,000 units funded" in report.checks
    assert any(re.fullmatch(r"\d+ sampled listener-days \(20 a day\) match the oracle line for line", check)
               for check in report.checks)
    assert "CheckConservation clean over the frozen month (0 mismatches)" in report.checks
    assert "the replay, every frozen chunk split again, reached the export's head and state hash" in report.checks
    assert report.metrics["chunks"].value == 30  # one a day: three listener-days each
    assert VERDICT.match(report.verdict), report.verdict


def test_a_budget_not_frozen_to_the_unit_fails_the_benchmark(tmp_path, monkeypatch):
    monkeypatch.setattr(city_freeze, "BUDGET", city_freeze.BUDGET + 1)  # what every budget should have frozen

    with pytest.raises(CheckFailed, match="every budget's 30 slices frozen"):
        run_tiny(city_freeze, tmp_path, monkeypatch, LISTENERS=3)
