"""Recovery publishes the ledger and its admission stores together or not at all, from plain files only.

The admission stores are published first and the ledger last, so a ledger in place means a whole recovery;
a rerun after a stop between the two keeps stores that match the backup and publishes the ledger.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ledger_engine.application.owner import LedgerOwner, read_writer_generation
from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint import backup as backup_module
from ledger_engine.checkpoint import offsite
from ledger_engine.checkpoint.backup import MANIFEST
from ledger_engine.checkpoint.offsite import recover, stage_backup
from ledger_engine.checkpoint.export import GENESIS_FILE, JOURNAL_FILE, METADATA_FILE
from ledger_engine.checkpoint.verify import VerificationError, file_digest
from ledger_engine.genesis import default_genesis, genesis_hash
from ledger_engine.storage.rocks import RocksStore
from tests.conftest import EnvelopeFactory
from tests.support import cli


@pytest.fixture(scope="module")
def staged_template(tmp_path_factory) -> Path:
    """One staged backup of a small ledger, with an envelope in its admission stores, beside the ledger and the
    admission stores it was taken from: made once for this module; each test works on its own copy."""
    root = tmp_path_factory.mktemp("staged-template")
    envelopes = EnvelopeFactory()
    (root / "admission" / "envelopes").mkdir(parents=True)
    (root / "admission" / "envelopes" / "kept.json").write_bytes(b"{}")
    with LedgerOwner.open(root / "ledger", genesis=default_genesis()) as owner:
        for account in ("alice", "bob"):
            assert owner.submit(envelopes.account(account, kind="worker", roles=["ingest"])).accepted
    for _ in range(3):  # every read-write open raises the writer generation
        LedgerOwner.open(root / "ledger", genesis=default_genesis()).close()
    with LedgerOwner.open(root / "ledger", genesis=default_genesis()) as owner:
        stage_backup(owner.checkpoint, owner.store.path, root / "admission", root / "staged" / "0001")
    return root


@pytest.fixture
def staged(staged_template, tmp_path) -> Path:
    """This test's copy of the staged backup, and of the ledger and admission stores beside it."""
    for name in ("ledger", "admission", "staged"):
        shutil.copytree(staged_template / name, tmp_path / name, symlinks=True)
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


@pytest.mark.parametrize("generation", ["7", -1, 2**52, 2**53 - 2, 2**63, True],
                         ids=["a string", "negative", "2^52", "next to the largest safe integer", "2^63", "a bool"])
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


def test_a_restored_generation_just_below_the_bound_leaves_a_ledger_writers_can_open(staged, tmp_path):
    path = staged / "0001" / "ledger" / MANIFEST
    manifest = orjson.loads(path.read_bytes())
    path.write_bytes(canonical_bytes({**manifest, "writer_generation": backup_module.MAX_RESTORED_GENERATION - 1}))
    restored = backup_module.restore(staged / "0001" / "ledger", tmp_path / "new" / "ledger")
    assert restored["writer_generation"] == backup_module.MAX_RESTORED_GENERATION
    with LedgerOwner.open(tmp_path / "new" / "ledger", genesis=default_genesis()) as owner:
        assert owner.head().sequence == 2


KILLED_BEFORE_THE_LEDGER_IS_PUBLISHED = """
import os, signal, sys
from pathlib import Path
from ledger_engine.checkpoint import offsite

published = offsite.publish

def killed_before_the_ledger(staging, target):
    if Path(target).name == "ledger":
        os.kill(os.getpid(), signal.SIGKILL)
    published(staging, target)

offsite.publish = killed_before_the_ledger
offsite.recover(sys.argv[1], sys.argv[2], backup_dir=sys.argv[3])
"""


def test_a_recovery_killed_between_its_two_renames_leaves_no_ledger_and_a_rerun_completes_it(staged, tmp_path):
    ledger, admission = tmp_path / "new" / "ledger", tmp_path / "new" / "admission"
    killed = subprocess.run([sys.executable, "-c", KILLED_BEFORE_THE_LEDGER_IS_PUBLISHED, str(ledger), str(admission),
                             str(staged)], cwd=Path(__file__).resolve().parents[2], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert not ledger.exists() and (admission / "envelopes" / "kept.json").read_bytes() == b"{}"
    recovered = recover(ledger, admission, backup_dir=staged)
    assert recovered["sequence"] == 2 and recovered["envelopes_restored"] == 1
    assert sorted(path.name for path in (tmp_path / "new").iterdir() if not path.name.startswith(".")) == [
        "admission", "ledger"]


def test_admission_stores_other_than_the_backups_are_refused_and_left_alone(staged, tmp_path, monkeypatch):
    ledger, admission = tmp_path / "new" / "ledger", tmp_path / "new" / "admission"
    (admission / "envelopes").mkdir(parents=True)
    (admission / "envelopes" / "kept.json").write_bytes(b'{"someone": "else"}')
    rebuilt = []
    monkeypatch.setattr(offsite, "restorer", lambda *args, **options: rebuilt.append(args) or (lambda staging: {}))
    with pytest.raises(VerificationError) as refused:
        recover(ledger, admission, backup_dir=staged)
    assert refused.value.item == str(admission.resolve()) and rebuilt == []  # refused before the long rebuild
    assert not ledger.exists() and (admission / "envelopes" / "kept.json").read_bytes() == b'{"someone": "else"}'


def test_a_file_written_into_the_admission_target_during_recovery_stops_it_with_no_ledger(staged, tmp_path,
                                                                                           monkeypatch):
    ledger, admission = tmp_path / "new" / "ledger", tmp_path / "new" / "admission"
    making = offsite.restorer

    def intruded(source, **options):
        build = making(source, **options)

        def build_then_intrude(staging):
            built = build(staging)
            admission.mkdir(parents=True, exist_ok=True)
            (admission / "written-meanwhile").write_bytes(b"x")
            return built

        return build_then_intrude

    monkeypatch.setattr(offsite, "restorer", intruded)
    with pytest.raises(VerificationError):
        recover(ledger, admission, backup_dir=staged)
    assert not ledger.exists() and [path.name for path in admission.iterdir()] == ["written-meanwhile"]


MISSHAPEN_MANIFESTS = {
    "no database files": lambda manifest: {key: value for key, value in manifest.items() if key != "db_files"},
    "database files as a list": lambda manifest: {**manifest, "db_files": []},
    "a sequence as a string": lambda manifest: {**manifest, "sequence": str(manifest["sequence"])},
    "no creation time": lambda manifest: {key: value for key, value in manifest.items() if key != "created_at_ms"},
    "a list": lambda manifest: [manifest],
}
MISSHAPEN_ADMISSION = {
    "no files": lambda manifest: {key: value for key, value in manifest.items() if key != "files"},
    "files as a list": lambda manifest: {**manifest, "files": []},
    "a count as a bool": lambda manifest: {**manifest, "evidence_referenced": True},
    "a list": lambda manifest: [manifest],
}


def _newer_copy(staged: Path) -> tuple[Path, dict]:
    """A copy of the staged backup that its manifest dates a moment later, so recovery tries it first."""
    newer = staged / "0002"
    shutil.copytree(staged / "0001", newer)
    manifest = orjson.loads((newer / offsite.LEDGER / MANIFEST).read_bytes())
    (newer / offsite.LEDGER / MANIFEST).write_bytes(
        canonical_bytes({**manifest, "created_at_ms": manifest["created_at_ms"] + 1}) + b"\n")
    return newer, manifest


def _reshape(path: Path, reshape) -> None:
    path.write_bytes(orjson.dumps(reshape(orjson.loads(path.read_bytes()))))


@pytest.mark.parametrize("reshape", MISSHAPEN_MANIFESTS.values(), ids=MISSHAPEN_MANIFESTS.keys())
def test_a_backup_manifest_of_the_wrong_shape_is_refused_as_damaged(staged, tmp_path, reshape):
    _reshape(staged / "0001" / "ledger" / MANIFEST, reshape)
    with pytest.raises(VerificationError) as refused:
        backup_module.restore(staged / "0001" / "ledger", tmp_path / "new" / "ledger")
    assert refused.value.item == MANIFEST
    nothing_published(tmp_path / "new" / "ledger")


@pytest.mark.parametrize("damaged, reshape", [
    *((offsite.LEDGER + "/" + MANIFEST, reshape) for reshape in MISSHAPEN_MANIFESTS.values()),
    *((offsite.ADMISSION_MANIFEST, reshape) for reshape in MISSHAPEN_ADMISSION.values())],
    ids=[*(f"ledger manifest: {name}" for name in MISSHAPEN_MANIFESTS),
         *(f"admission manifest: {name}" for name in MISSHAPEN_ADMISSION)])
def test_recovery_passes_over_a_newer_backup_whose_manifest_is_misshapen_for_the_older_good_one(staged, tmp_path,
                                                                                                damaged, reshape):
    newer, manifest = _newer_copy(staged)
    _reshape(newer / damaged, reshape)
    recovered = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", backup_dir=staged)
    assert (recovered["sequence"], recovered["created_at_ms"]) == (manifest["sequence"], manifest["created_at_ms"])
    assert (tmp_path / "new" / "admission" / "envelopes" / "kept.json").read_bytes() == b"{}"


@pytest.mark.parametrize("operation", ["restore", "recover"])
def test_a_plain_file_where_the_ledger_goes_is_refused_with_a_code_and_kept(staged, tmp_path, operation):
    target = tmp_path / "new" / "ledger"
    target.parent.mkdir()
    target.write_bytes(b"someone's file")
    with pytest.raises(VerificationError) as refused:
        if operation == "restore":
            backup_module.restore(staged / "0001" / "ledger", target)
        else:
            recover(target, tmp_path / "new" / "admission", backup_dir=staged)
    assert refused.value.item == str(target.resolve())
    assert target.read_bytes() == b"someone's file"


GENESIS_SHAPES = {
    "a list": [],
    "an empty object": {},
    "an actor that is a number": {**default_genesis(), "actors": [1]},
    "an actor without roles": {**default_genesis(), "actors": [{"actor_id": "genesis-admin"}]},
    "no label": {key: value for key, value in default_genesis().items() if key != "label"},
}


@pytest.mark.parametrize("document", GENESIS_SHAPES.values(), ids=GENESIS_SHAPES.keys())
def test_recovery_passes_over_a_newer_backup_whose_genesis_is_misshapen(staged, tmp_path, document):
    """Without a trusted genesis hash, the export's own metadata vouches for its genesis: it must still be one."""
    newer, manifest = _newer_copy(staged)
    export = newer / offsite.LEDGER / "export"
    (export / GENESIS_FILE).write_bytes(canonical_bytes(document))
    metadata = orjson.loads((export / METADATA_FILE).read_bytes())
    digest, size = file_digest(export / GENESIS_FILE)
    metadata["files"][GENESIS_FILE] = {"sha256": digest, "bytes": size}
    (export / METADATA_FILE).write_bytes(canonical_bytes({**metadata, "genesis_hash": genesis_hash(document)}))
    with pytest.raises(VerificationError) as refused:
        offsite.verify_staged(newer)
    assert refused.value.item == GENESIS_FILE
    recovered = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", backup_dir=staged)
    assert recovered["created_at_ms"] == manifest["created_at_ms"]


def _as_plain_file(path: Path) -> None:
    shutil.rmtree(path)
    path.write_bytes(b"not a directory")


def _as_empty_directory(path: Path) -> None:
    shutil.rmtree(path)
    path.mkdir()


TREE_SHAPES = {
    "admission stores as a plain file": (lambda newer: _as_plain_file(newer / offsite.ADMISSION),
                                         offsite.ADMISSION_MANIFEST, "files"),
    "the database as a plain file": (lambda newer: _as_plain_file(newer / offsite.LEDGER / "db"),
                                     offsite.LEDGER + "/" + MANIFEST, "db_files"),
    "the database as an empty directory": (lambda newer: _as_empty_directory(newer / offsite.LEDGER / "db"),
                                           offsite.LEDGER + "/" + MANIFEST, "db_files"),
}


@pytest.mark.parametrize("damage", TREE_SHAPES.values(), ids=TREE_SHAPES.keys())
def test_recovery_passes_over_a_newer_backup_whose_trees_are_misshapen_though_its_manifests_agree(staged, tmp_path,
                                                                                                   damage):
    newer, manifest = _newer_copy(staged)
    reshape_tree, manifest_name, listing = damage
    reshape_tree(newer)
    _reshape(newer / manifest_name, lambda document: {**document, listing: {}})
    with pytest.raises(VerificationError):
        offsite.verify_staged(newer)
    recovered = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", backup_dir=staged)
    assert recovered["created_at_ms"] == manifest["created_at_ms"]
    assert (tmp_path / "new" / "admission" / "envelopes" / "kept.json").read_bytes() == b"{}"


MISSHAPEN_GENESIS = {
    "a null verifier": {**default_genesis(), "step_up_verifier": None},
    "a verifier as a list": {**default_genesis(), "step_up_verifier": []},
    "a payer that is no address": {**default_genesis(), "payer_address": "0xABC"},
    "an actor named twice": {**default_genesis(), "actors": [{"actor_id": "genesis-admin", "roles": ["admin"]},
                                                              {"actor_id": "genesis-admin", "roles": ["finance"]}]},
    "a schema version of true": {**default_genesis(), "schema_version": True},
    "a list": [],
}


@pytest.mark.parametrize("document", MISSHAPEN_GENESIS.values(), ids=MISSHAPEN_GENESIS.keys())
def test_init_refuses_a_misshapen_genesis_with_a_code_and_makes_no_ledger(tmp_path, document):
    (tmp_path / "genesis.json").write_bytes(canonical_bytes(document))
    run = cli.porto_ledger("init", "--genesis", tmp_path / "genesis.json", data=tmp_path / "ledger")
    assert run.status != 0 and run.last["code"] in ("VERIFICATION_FAILED", "UNSUPPORTED_RULESET"), run.lines
    assert not (tmp_path / "ledger").exists()


@pytest.mark.parametrize("kind", ["a directory", "a pipe", "a link"])
@pytest.mark.parametrize("name", [GENESIS_FILE, JOURNAL_FILE, METADATA_FILE])
def test_recovery_passes_over_a_newer_backup_whose_export_holds_a_special_file(staged, tmp_path, name, kind):
    """Nothing in a backup is opened before it is found to be a regular file: a pipe would stall recovery."""
    newer, manifest = _newer_copy(staged)
    path = newer / offsite.LEDGER / "export" / name
    path.unlink()
    if kind == "a directory":
        path.mkdir()
    elif kind == "a pipe":
        os.mkfifo(path)
    else:
        path.symlink_to(staged / "0001" / offsite.LEDGER / "export" / name)
    with pytest.raises(VerificationError):
        offsite.verify_staged(newer)
    recovered = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", backup_dir=staged)
    assert recovered["created_at_ms"] == manifest["created_at_ms"]
