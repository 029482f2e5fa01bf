"""The receipts benchmark on tiny counts: bare rounds after receipt rounds keep the ledger's admission-time order."""

from __future__ import annotations

from benchmarks import receipts
from tests.benchmarks.tiny import run_tiny


def test_every_round_of_every_kind_is_recorded_after_the_rounds_before_it(tmp_path, monkeypatch):
    report = run_tiny(receipts, tmp_path, monkeypatch, LISTENERS=6, ROUNDS=3, CALLERS=4, VERIFICATION_SAMPLES=5)

    bare = [check for check in report.checks if check.endswith(" bare commands accepted")]
    assert bare and not bare[0].startswith("all 0 ")
    assert any(check.endswith(" prepared recorded and counted") for check in report.checks)
    assert report.metrics["ratio_to_bare"].value > 0
