"""Backups are verified before they count, restore checks everything and leaves dispatch disabled."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Callable

import orjson
import pytest

from ledger_engine.application.journal_tree import STORED_FROM_LEVEL, node_key, node_value
from ledger_engine.application.owner import WRITER_KEY, LedgerOwner
from ledger_engine.storage.value_codec import encode_value
from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint.backup import MANIFEST, backup_owner, verify_backup
from ledger_engine.checkpoint.export import JOURNAL_FILE, ROWS_FILE
from ledger_engine.checkpoint.integrity import VERIFIED_FILE
from ledger_engine.checkpoint.verify import hash_tree
from ledger_engine.checkpoint.offsite import stage_backup
from ledger_engine.demo import demo_genesis
from ledger_engine.keys import seq20
from ledger_engine.layout import EVENTS, INDEXES, JOURNAL, META, PRIVATE_AUX
from ledger_engine.storage.rocks import OWNER_FILE, WITNESS_FILE, RocksStore
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



# Whoever can write a backup can change a row of its database and rewrite the manifest's unsigned file hashes;
# the export beside it still verifies, and so do the manifest's head and state digest (rows outside the digest).

def _forge_posting(store: RocksStore) -> bytes:
    """The first posting's amounts, ten times as large (still balanced)."""
    key, event = next((key, event) for key, event in ((key, orjson.loads(raw)) for key, raw in store.scan(EVENTS))
                      if event["type"] == "Posted")
    for line in event["lines"]:
        line["amount"] = str(int(line["amount"]) * 10)
    store.write([(EVENTS, key, canonical_bytes(event))])
    return key


def _forge_journal_entry(store: RocksStore) -> bytes:
    """Journal entry 1 names another actor: a history that was never exported."""
    key = seq20(1).encode()
    entry = orjson.loads(store.get(JOURNAL, key))
    entry["envelope"]["actor_id"] = "mallory"
    store.write([(JOURNAL, key, canonical_bytes(entry))])
    return key


def _forge_paid_total(store: RocksStore) -> bytes:
    """What the console shows the first artist paid, nine million more."""
    key, raw = next(store.scan(INDEXES, b"paid_total/"))
    total = orjson.loads(raw)
    total["amount"] = str(int(total["amount"]) + 9_000_000)
    store.write([(INDEXES, key, canonical_bytes(total))])
    return key


def _forge_tree_node(store: RocksStore) -> bytes:
    """The journal tree node over entries 1..16 (read by proofs and commitment claims at size 16)."""
    key = node_key(STORED_FROM_LEVEL, 0)
    store.write([(META, key, node_value(bytes.fromhex("ab" * 32)))])
    return key


FORGERIES: dict[str, tuple[str, Callable[[RocksStore], bytes]]] = {
    "posted event amount": (EVENTS, _forge_posting),
    "journal entry": (JOURNAL, _forge_journal_entry),
    "paid total index": (INDEXES, _forge_paid_total),
    "journal tree node": (META, _forge_tree_node),
}


def forge_backup_database(backup: Path, forge: Callable[[RocksStore], bytes]) -> bytes:
    """Change one row of the backup's database, then give the manifest the new files' hashes."""
    db = backup / "db"
    with RocksStore(db) as store:
        key = forge(store)
    for leftover in (WITNESS_FILE, OWNER_FILE):  # look like a plain checkpoint again
        (db / leftover).unlink(missing_ok=True)
    manifest = orjson.loads((backup / MANIFEST).read_bytes())
    manifest["db_files"] = hash_tree(db)
    (backup / MANIFEST).write_bytes(canonical_bytes(manifest) + b"\n")
    return key


@pytest.mark.parametrize("case", FORGERIES, ids=list(FORGERIES))
def test_a_database_forged_beside_an_intact_export_is_never_published(demo_ledger, backup_copy, tmp_path, case):
    """The restored ledger is the export re-executed: the backed-up database's rows never reach it."""
    family, forge = FORGERIES[case]
    key = forge_backup_database(backup_copy, forge)
    cli.succeeded(cli.porto_ledger("verify-export", backup_copy / "export"))  # the export beside it is intact

    restored = tmp_path / "restored"
    cli.succeeded(cli.porto_ledger("restore", backup_copy, data=restored))
    with RocksStore(restored, read_only=True) as ours, RocksStore(demo_ledger.data, read_only=True) as original:
        assert ours.get(family, key) == original.get(family, key) is not None, f"{family}/{key.decode()} forged"
    cli.succeeded(cli.porto_ledger("verify", data=restored))


def _add_to_backup_database(backup: Path, ops: list, files: dict[str, bytes]) -> None:
    db = backup / "db"
    with RocksStore(db) as store:
        store.write(ops)
    for leftover in (WITNESS_FILE, OWNER_FILE):
        (db / leftover).unlink(missing_ok=True)
    for name, content in files.items():
        (db / name).write_bytes(content)
    manifest = orjson.loads((backup / MANIFEST).read_bytes())
    manifest["db_files"] = hash_tree(db)
    (backup / MANIFEST).write_bytes(canonical_bytes(manifest) + b"\n")


def test_only_the_private_rows_of_the_backed_up_database_are_kept(backup_copy, tmp_path):
    identity = (PRIVATE_AUX, b"identity/listener-1", encode_value({"email_digest": "ab" * 32}))
    _add_to_backup_database(backup_copy, [identity, (META, b"dispatch-override", encode_value({"enabled": True}))], {
        WITNESS_FILE: b"porto-witness/1 00000000000000000001 00000000\n",
        VERIFIED_FILE: canonical_bytes({"sequence": 10**9, "ok": True}),
    })
    restored = tmp_path / "restored"
    cli.succeeded(cli.porto_ledger("restore", backup_copy, data=restored))
    assert not (restored / VERIFIED_FILE).exists(), "a verification record the restore did not make"
    with RocksStore(restored, read_only=True) as store:
        assert store.get(PRIVATE_AUX, identity[1]) == identity[2]
        assert store.get(META, b"dispatch-override") is None
    cli.succeeded(cli.porto_ledger("verify", data=restored))


@pytest.mark.parametrize("row", [
    (b"dispatch/enabled", encode_value({"enabled": True})),
    (b"identity/listener-1", b'{"email":"a@b"}'),
], ids=["unknown kind", "not a stored value"])
def test_a_private_row_of_no_known_shape_refuses_the_restore(backup_copy, tmp_path, row):
    _add_to_backup_database(backup_copy, [(PRIVATE_AUX, *row)], {})
    restored = tmp_path / "restored"
    run = cli.porto_ledger("restore", backup_copy, data=restored)
    assert (run.status, run.last["code"], run.last["item"]) == (1, "VERIFICATION_FAILED", "db"), run.lines
    assert not restored.exists() or not any(restored.iterdir())


def test_a_write_into_a_backup_file_leaves_the_ledger_as_it_was(stopped_ledger, tmp_path):
    """A checkpoint hard-links the ledger's tables: a backup must not share a block (or a writer) with them."""
    backup = tmp_path / "backup"
    cli.succeeded(cli.porto_ledger("backup", backup, data=stopped_ledger))
    ledger_inodes = {os.stat(path).st_ino for path in stopped_ledger.iterdir() if path.is_file()}
    shared = [path.name for path in (backup / "db").iterdir() if os.stat(path).st_ino in ledger_inodes]
    assert not shared, f"backup files sharing an inode with the live ledger's: {sorted(shared)}"

    table = max((backup / "db").glob("*.sst"), key=lambda path: path.stat().st_size)
    with open(table, "r+b") as handle:  # in place, as a damaged disk block or an intruder would
        handle.seek(table.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x01]))
    cli.succeeded(cli.porto_ledger("verify", data=stopped_ledger))


def _staged(data: Path, admission: Path, stage: Path) -> dict:
    with RocksStore(data) as store:
        return stage_backup(store.checkpoint, data, admission, stage)


def test_recover_from_a_backup_directory_restores_the_newest_backup_whatever_its_name(demo_ledger, tmp_path):
    admission = tmp_path / "admission-live"
    admission.mkdir()
    lines = demo_ledger.stream.read_bytes().splitlines(keepends=True)
    older = tmp_path / "older-ledger"
    cli.init_demo(older)
    cli.submit(older, cli.write_stream(tmp_path / "half.jsonl", lines[: len(lines) // 2]))
    newer = tmp_path / "newer-ledger"
    shutil.copytree(demo_ledger.data, newer)

    backups = tmp_path / "backups"
    old = _staged(older, admission, backups / "backup-9")
    new = _staged(newer, admission, backups / "backup-10")  # sorts first by name
    assert old["sequence"] < new["sequence"] and old["created_at_ms"] <= new["created_at_ms"]

    run = cli.succeeded(cli.porto_ledger("recover", "--admission", tmp_path / "admission",
                                         "--backup-dir", backups, data=tmp_path / "restored"))
    assert (run.last["sequence"], run.last["entry_hash"]) == (new["sequence"], new["entry_hash"])

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


def test_a_journal_entry_moved_to_another_key_is_named_by_verify_and_refused_by_backup(stopped_ledger, tmp_path):
    """Entries that verify in order under keys the owner never reads: the ledger would not open, or would
    answer for the wrong entry."""
    with RocksStore(stopped_ledger) as store:
        last_key, last = list(store.scan(JOURNAL))[-1]
        store.write([(JOURNAL, last_key, None), (JOURNAL, last_key + b"~", last)])
    for run in (cli.porto_ledger("verify", data=stopped_ledger),
                cli.porto_ledger("backup", tmp_path / "backup", data=stopped_ledger)):
        assert run.status != 0 and run.last.get("code") == "STORAGE_CORRUPT", run.lines
        assert f"{last_key.decode()}~ is where" in run.last["detail"]


@pytest.mark.parametrize("writer", [b'{"generation":"7"}', b"not json"], ids=["a string", "not JSON"])
def test_a_backed_up_writer_generation_that_is_no_count_refuses_the_restore(backup_copy, tmp_path, writer):
    _add_to_backup_database(backup_copy, [(META, WRITER_KEY, writer)], {})
    run = cli.porto_ledger("restore", backup_copy, data=tmp_path / "restored")
    assert (run.status, run.last["code"], run.last["item"]) == (1, "VERIFICATION_FAILED", "db"), run.lines
