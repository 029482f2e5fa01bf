"""Backups are verified before they count, restore checks everything and leaves dispatch disabled."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Callable

import orjson
import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.backup import MANIFEST, backup_owner, verify_backup
from ledger_engine.checkpoint.export import JOURNAL_FILE, ROWS_FILE
from ledger_engine.demo import demo_genesis
from tests.support import cli


@pytest.fixture(scope="module")
def pristine_backup(demo_ledger, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("backup")
    shutil.copytree(demo_ledger.data, root / "ledger")
    cli.succeeded(cli.porto_ledger("backup", root / "backup", data=root / "ledger"))
    return root / "backup"


@pytest.fixture
def backup_copy(pristine_backup, tmp_path) -> Path:
    copy = tmp_path / "backup"
    shutil.copytree(pristine_backup, copy)
    return copy


def test_backup_refuses_a_destination_inside_the_data_directory(stopped_ledger, tmp_path):
    (tmp_path / "alias").symlink_to(stopped_ledger)
    for destination in (stopped_ledger / "backup", stopped_ledger, tmp_path / "alias" / "backup"):
        run = cli.porto_ledger("backup", destination, data=stopped_ledger)
        assert run.status == 1
        assert (run.last["code"], run.last["reason"]) == (
            "VERIFICATION_FAILED", "a backup must live outside the data directory")
    assert not (stopped_ledger / "backup").exists()


def test_backup_refuses_a_destination_that_is_not_empty(stopped_ledger, tmp_path):
    (tmp_path / "occupied").mkdir()
    (tmp_path / "occupied" / "keep.txt").write_text("operator notes")
    run = cli.porto_ledger("backup", tmp_path / "occupied", data=stopped_ledger)
    assert (run.status, run.last["reason"]) == (1, "backup destination is not empty")
    assert [path.name for path in (tmp_path / "occupied").iterdir()] == ["keep.txt"]


def test_restore_reproduces_the_head_and_leaves_dispatch_disabled(demo_ledger, pristine_backup, tmp_path):
    restored = tmp_path / "restored"
    run = cli.succeeded(cli.porto_ledger("restore", pristine_backup, data=restored))
    manifest = orjson.loads((pristine_backup / "MANIFEST.json").read_bytes())
    assert run.last == {"ok": True, **demo_ledger.head, "dispatch_enabled": False,
                        "writer_generation": manifest["writer_generation"] + 1}
    assert cli.head(restored) == demo_ledger.head
    with LedgerOwner.open(restored) as owner:
        assert owner.dispatch_state()["enabled"] is False


def test_restore_refuses_a_data_directory_that_is_not_empty(stopped_ledger, pristine_backup):
    run = cli.porto_ledger("restore", pristine_backup, data=stopped_ledger)
    assert (run.status, run.last["reason"]) == (1, "restore needs an empty data directory")


def first_table(backup: Path) -> Path:
    return sorted((backup / "db").glob("*.sst"))[0]


def flip_middle_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(data)


def edit_manifest_sequence(backup: Path) -> None:
    manifest = orjson.loads((backup / MANIFEST).read_bytes())
    manifest["sequence"] -= 1
    (backup / MANIFEST).write_bytes(orjson.dumps(manifest, option=orjson.OPT_SORT_KEYS) + b"\n")


# (damage, the item restore must name, read before the damage is done)
DAMAGE: dict[str, tuple[Callable[[Path], None], Callable[[Path], str]]] = {
    "deleted table file": (lambda b: first_table(b).unlink(), lambda b: f"db/{first_table(b).name}"),
    "altered table file": (lambda b: flip_middle_byte(first_table(b)), lambda b: f"db/{first_table(b).name}"),
    "deleted CURRENT": (lambda b: (b / "db" / "CURRENT").unlink(), lambda b: "db/CURRENT"),
    "deleted export journal": (lambda b: (b / "export" / JOURNAL_FILE).unlink(), lambda b: JOURNAL_FILE),
    "altered export rows": (lambda b: flip_middle_byte(b / "export" / ROWS_FILE), lambda b: ROWS_FILE),
    "deleted manifest": (lambda b: (b / MANIFEST).unlink(), lambda b: MANIFEST),
    "manifest head edited": (edit_manifest_sequence, lambda b: MANIFEST),
}


@pytest.mark.parametrize("case", DAMAGE, ids=list(DAMAGE))
def test_restore_of_a_damaged_backup_fails_naming_the_damage(backup_copy, tmp_path, case):
    damage, named = DAMAGE[case]
    expected_item = named(backup_copy)
    damage(backup_copy)
    restored = tmp_path / "restored"
    run = cli.porto_ledger("restore", backup_copy, data=restored)
    assert (run.status, run.last["code"], run.last["item"]) == (1, "VERIFICATION_FAILED", expected_item)
    assert not restored.exists() or not any(restored.iterdir())


def test_a_live_backup_taken_while_commands_arrive_restores_and_catches_up(demo_ledger, tmp_path):
    envelopes = [orjson.loads(line) for line in demo_ledger.stream.read_bytes().splitlines()]
    middle = len(envelopes) // 2
    with LedgerOwner.open(tmp_path / "live", genesis=demo_genesis()) as owner:
        queued = [owner.submit_async(envelope) for envelope in envelopes[:middle]]
        arriving = threading.Thread(target=lambda: [owner.submit(envelope) for envelope in envelopes[middle:]])
        arriving.start()
        manifest = backup_owner(owner, tmp_path / "backup")
        arriving.join()
        queued_last = max(future.result().sequence for future in queued)
        final_head = owner.head()

    assert queued_last <= manifest["sequence"] <= final_head.sequence
    assert verify_backup(tmp_path / "backup") == manifest
    cli.succeeded(cli.porto_ledger("verify-export", tmp_path / "backup" / "export"))
    restored = tmp_path / "restored"
    restored_head = cli.succeeded(cli.porto_ledger("restore", tmp_path / "backup", data=restored)).last
    assert (restored_head["sequence"], restored_head["entry_hash"]) == (manifest["sequence"], manifest["entry_hash"])

    cli.submit(restored, demo_ledger.stream)
    assert cli.head(restored) == demo_ledger.head
