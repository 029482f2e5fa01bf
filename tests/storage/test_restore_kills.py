"""A restore is all or nothing, proven by SIGKILLing real ``porto-ledger restore`` processes part way."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ledger_engine.application.owner import LedgerOwner, read_writer_generation
from ledger_engine.checkpoint.backup import MANIFEST
from ledger_engine.storage.rocks import RocksStore
from tests.storage.conftest import SUMMARY_LINES
from tests.support import cli
from tests.support.kills import killed_part_way

pytestmark = [pytest.mark.slow_kill, pytest.mark.durable]

KILLS = 14


@pytest.fixture(scope="module")
def backup(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("restore-kills")
    data = cli.demo_ledger(root, 11, listeners=2, days=1)
    cli.succeeded(cli.porto_ledger("backup", root / "backup", data=data))
    return root / "backup"


def outcome_of(target: Path, manifest: dict) -> str:
    """"none" (no ledger at the target) or "verified" (the backup's head, dispatch off); anything else fails."""
    if not target.exists() or not any(target.iterdir()):
        return "none"
    head = cli.head(target)
    assert (head["sequence"], head["entry_hash"], head["logical_state_hash"]) == (
        manifest["sequence"], manifest["entry_hash"], manifest["logical_state_hash"])
    assert cli.succeeded(cli.porto_ledger("verify", data=target)).last["ok"] is True
    with RocksStore(target, read_only=True) as store:
        assert read_writer_generation(store) > manifest["writer_generation"]
    with LedgerOwner.open(target) as owner:
        assert owner.dispatch_state()["enabled"] is False
    return "verified"


def test_a_killed_restore_leaves_no_ledger_or_a_verified_one_with_dispatch_off(backup, tmp_path):
    manifest = orjson.loads((backup / MANIFEST).read_bytes())
    outcomes = killed_part_way("restore", backup, tmp_path, kills=KILLS, seed=9,
                               outcome_of=lambda target: outcome_of(target, manifest))
    SUMMARY_LINES.append(f"restore kills: {KILLS}, {outcomes.count('none')} left no ledger, "
                         f"{outcomes.count('verified')} left a verified ledger with dispatch off, 0 anything else")
    assert "none" in outcomes


def test_each_restore_and_promotion_raises_the_writer_generation(backup, tmp_path):
    manifest = orjson.loads((backup / MANIFEST).read_bytes())
    restored = cli.succeeded(cli.porto_ledger("restore", backup, data=tmp_path / "restored")).last
    assert restored["writer_generation"] == manifest["writer_generation"] + 1
    with LedgerOwner.open(tmp_path / "restored") as owner:
        opened = owner.writer_generation
        assert opened > restored["writer_generation"]
    promoted = cli.succeeded(cli.porto_ledger("promote", "--reason", "reconciled", data=tmp_path / "restored")).last
    assert promoted["writer_generation"] == opened + 1
    with LedgerOwner.open(tmp_path / "restored") as owner:
        opened = owner.writer_generation
        assert opened == promoted["writer_generation"] + 1
    cli.succeeded(cli.porto_ledger("backup", tmp_path / "second", data=tmp_path / "restored"))
    second = orjson.loads((tmp_path / "second" / MANIFEST).read_bytes())
    assert second["writer_generation"] >= opened  # the backup carries the promoted ledger's generation
    again = cli.succeeded(cli.porto_ledger("restore", tmp_path / "second", data=tmp_path / "again")).last
    assert again["writer_generation"] == second["writer_generation"] + 1


def test_restore_refuses_a_target_that_holds_anything(backup, tmp_path):
    target = tmp_path / "occupied"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    run = cli.porto_ledger("restore", backup, data=target)
    assert run.status == 1 and run.last["code"] == "VERIFICATION_FAILED"
    assert [path.name for path in target.iterdir()] == ["notes.txt"]
    assert not list(tmp_path.glob(".occupied.restoring-*"))
