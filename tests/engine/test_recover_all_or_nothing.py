"""Recovery publishes the ledger and its admission stores together or not at all, from plain files only."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import orjson
import pytest

from ledger_engine.application.owner import LedgerOwner, read_writer_generation
from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint import backup as backup_module
from ledger_engine.checkpoint import offsite
from ledger_engine.checkpoint.backup import MANIFEST
from ledger_engine.checkpoint.offsite import recover, stage_backup
from ledger_engine.checkpoint.verify import VerificationError
from ledger_engine.genesis import default_genesis
from ledger_engine.storage.rocks import RocksStore
from tests.conftest import EnvelopeFactory


@pytest.fixture
def staged(tmp_path) -> Path:
    """One staged backup of a small ledger, with an envelope in its admission stores."""
    envelopes = EnvelopeFactory()
    (tmp_path / "admission" / "envelopes").mkdir(parents=True)
    (tmp_path / "admission" / "envelopes" / "kept.json").write_bytes(b"{}")
    with LedgerOwner.open(tmp_path / "ledger", genesis=default_genesis()) as owner:
        for account in ("alice", "bob"):
            assert owner.submit(envelopes.account(account, kind="worker", roles=["ingest"])).accepted
    for _ in range(3):  # every read-write open raises the writer generation
        LedgerOwner.open(tmp_path / "ledger", genesis=default_genesis()).close()
    with LedgerOwner.open(tmp_path / "ledger", genesis=default_genesis()) as owner:
        stage_backup(owner.checkpoint, owner.store.path, tmp_path / "admission", tmp_path / "staged" / "0001")
    return tmp_path / "staged"


def nothing_published(new: Path) -> None:
    assert not new.exists() or list(new.iterdir()) == [], sorted(path.name for path in new.iterdir())


def test_a_special_file_in_the_admission_stores_is_refused_before_anything_is_published(staged, tmp_path):
    os.mkfifo(staged / "0001" / "admission" / "envelopes" / "pipe.json")
    with pytest.raises(Exception) as refused:  # the only backup does not verify
        recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", backup_dir=staged)
    assert "no staged backup" in str(refused.value)
    nothing_published(tmp_path / "new")


def test_a_symbolic_link_in_the_backed_up_database_is_refused(staged, tmp_path):
    (staged / "0001" / "ledger" / "db" / "LINK").symlink_to("/")
    with pytest.raises(VerificationError) as refused:
        backup_module.restore(staged / "0001" / "ledger", tmp_path / "new" / "ledger")
    assert refused.value.item == "db/LINK"
    nothing_published(tmp_path / "new")


def test_admission_stores_that_cannot_be_copied_leave_no_ledger_either(staged, tmp_path, monkeypatch):
    copying = shutil.copytree

    def out_of_space(source, destination, **options):
        if Path(source).name == "admission":
            raise OSError(errno.ENOSPC, "No space left on device")
        return copying(source, destination, **options)

    monkeypatch.setattr(offsite.shutil, "copytree", out_of_space)
    with pytest.raises(OSError):
        recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", backup_dir=staged)
    nothing_published(tmp_path / "new")
    monkeypatch.undo()
    recovered = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", backup_dir=staged)
    assert recovered["sequence"] == 2 and recovered["envelopes_restored"] == 1


def test_a_restore_leaves_no_scratch_copy_in_the_ledger_or_beside_it(staged, tmp_path):
    backup_module.restore(staged / "0001" / "ledger", tmp_path / "new" / "ledger")
    assert sorted(path.name for path in (tmp_path / "new").iterdir()) == ["ledger"]
    assert [path.name for path in (tmp_path / "new" / "ledger").iterdir() if path.is_dir()] == []


@pytest.mark.parametrize("generation", ["7", -1, 2**63, True], ids=["a string", "negative", "too large", "a bool"])
def test_a_manifest_whose_writer_generation_is_no_count_is_refused(staged, tmp_path, generation):
    path = staged / "0001" / "ledger" / MANIFEST
    manifest = orjson.loads(path.read_bytes())
    path.write_text(json.dumps({**manifest, "writer_generation": generation}, sort_keys=True) + "\n")
    with pytest.raises(VerificationError) as refused:
        backup_module.restore(staged / "0001" / "ledger", tmp_path / "new" / "ledger")
    assert (refused.value.item, refused.value.reason) == (MANIFEST, "the writer generation is not a count")


def test_a_manifest_cannot_lower_the_writer_generation_the_database_recorded(staged, tmp_path):
    backed_up = staged / "0001" / "ledger"
    with RocksStore(tmp_path / "ledger", read_only=True) as live:
        recorded = read_writer_generation(live)
    assert recorded >= 4
    manifest = orjson.loads((backed_up / MANIFEST).read_bytes())
    (backed_up / MANIFEST).write_bytes(canonical_bytes({**manifest, "writer_generation": 0}) + b"\n")
    restored = backup_module.restore(backed_up, tmp_path / "new" / "ledger")
    assert restored["writer_generation"] == recorded + 1
