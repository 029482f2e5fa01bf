"""The replay benchmark on tiny counts: each child (replay, both verifications, restore) reaches the built head."""

from __future__ import annotations

import pytest

from benchmarks import replay
from tests.benchmarks.tiny import run_tiny


# Eight benchmark children, each importing the engine and replaying or restoring a ledger: a long end-to-end
# test (docs/adr/0100).
pytestmark = pytest.mark.slow


def test_replay_verify_and_restore_each_reach_the_head_they_are_timed_against(tmp_path, monkeypatch):
    report = run_tiny(replay, tmp_path, monkeypatch, SIZES=(30, 60))

    for size in (30, 60):
        assert f"the restore of {size:,} commands reached the backup's head and state hash" in report.checks
        assert f"the replay of {size:,} commands reached the export's head and state hash" in report.checks
        assert report.metrics[f"n{size}_restore_ratio_to_group_commit"].value > 0
