"""A replay is all or nothing, proven by SIGKILLing real ``porto-ledger replay`` processes part way."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_engine.application.owner import LedgerOwner
from tests.storage.conftest import SUMMARY_LINES
from tests.support import cli
from tests.support.kills import killed_part_way

pytestmark = [pytest.mark.slow_kill, pytest.mark.durable]

KILLS = 8


@pytest.fixture(scope="module")
def export(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("replay-kills")
    data = cli.demo_ledger(root, 11, listeners=2, days=1)
    return root / "export", cli.export(data, root / "export")


def outcome_of(target: Path, metadata: dict) -> str:
    """"none" (no ledger at the target) or "verified" (the export's head, dispatch off); anything else fails."""
    if not target.exists() or not any(target.iterdir()):
        return "none"
    head = cli.head(target)
    assert (head["sequence"], head["entry_hash"], head["logical_state_hash"]) == (
        metadata["sequence"], metadata["last_entry_hash"], metadata["logical_state_hash"])
    assert cli.succeeded(cli.porto_ledger("verify", data=target)).last["ok"] is True
    with LedgerOwner.open(target) as owner:
        assert owner.dispatch_state()["enabled"] is False
    return "verified"


def test_a_killed_replay_leaves_no_ledger_or_a_verified_one_with_dispatch_off(export, tmp_path):
    directory, metadata = export
    outcomes = killed_part_way("replay", directory, tmp_path, kills=KILLS, seed=5,
                               outcome_of=lambda target: outcome_of(target, metadata))
    SUMMARY_LINES.append(f"replay kills: {KILLS}, {outcomes.count('none')} left no ledger, "
                         f"{outcomes.count('verified')} left a verified ledger with dispatch off, 0 anything else")
    assert "none" in outcomes
