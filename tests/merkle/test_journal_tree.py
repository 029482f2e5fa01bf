"""The journal tree kept by the executor, carried by exports and backups, and proven from the command line."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest
from pydantic import BaseModel

from ledger_engine.application import journal_tree
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.backup import backup_owner, verify_backup
from ledger_engine.checkpoint.export import METADATA_FILE, export_store
from ledger_engine.checkpoint.integrity import verify_directory
from ledger_engine.checkpoint.load import load_checkpoint
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.checkpoint.verify import VerificationError, verify_export
from ledger_engine.demo import demo_envelopes, demo_genesis
from ledger_engine.domain import registry
from ledger_engine.domain.commands.money.artifacts import JournalTreeClaim
from ledger_engine.domain.registry import Payload, command
from ledger_engine.errors import ErrorCode, StorageFault
from ledger_engine.genesis import default_genesis
from ledger_engine.layout import JOURNAL, META
from ledger_engine.merkle import tree, verify_proof_document
from ledger_engine.merkle.journal import journal_nodes
from ledger_engine.storage.rocks import RocksStore
from tests.support.cli import porto_ledger


def _entry_hashes(store: RocksStore) -> list[str]:
    return [orjson.loads(raw)["entry_hash"] for _, raw in store.scan(JOURNAL)]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory) -> Path:
    """A stopped ledger holding a demo scenario, submitted in groups."""
    data = tmp_path_factory.mktemp("tree") / "ledger"
    with LedgerOwner.open(data, genesis=demo_genesis()) as owner:
        for future in [owner.submit_async(envelope) for envelope in demo_envelopes(seed=5, listeners=3, days=1)]:
            future.result()
    return data


def _copy(ledger: Path, tmp_path: Path) -> Path:
    import shutil
    shutil.copytree(ledger, tmp_path / "copy")
    return tmp_path / "copy"


def test_the_stored_tree_has_one_leaf_per_entry_and_the_root_of_the_journal(ledger):
    with RocksStore(ledger, read_only=True, stopped=True) as store:
        hashes = _entry_hashes(store)
        frontier = journal_tree.open_tree(store, journal_tree.Head(len(hashes), hashes[-1]))
        assert frontier.size == len(hashes) > 100
        assert frontier.root() == journal_nodes(hashes).root()
        assert journal_tree.stored_root(store, 17) == journal_nodes(hashes[:17]).root().hex()


def test_exports_carry_the_root_and_verification_checks_it(ledger, tmp_path):
    with RocksStore(ledger, read_only=True, stopped=True) as store:
        metadata = export_store(store, tmp_path / "export")
        expected = journal_nodes(_entry_hashes(store)).root().hex()
    assert metadata["journal_tree"] == {"size": metadata["sequence"], "root": expected}
    assert verify_export(tmp_path / "export")["journal_tree"] == metadata["journal_tree"]
    forged = {**metadata, "journal_tree": {"size": metadata["sequence"], "root": "00" * 32}}
    (tmp_path / "export" / METADATA_FILE).write_bytes(orjson.dumps(forged, option=orjson.OPT_SORT_KEYS) + b"\n")
    with pytest.raises(VerificationError) as raised:
        verify_export(tmp_path / "export")
    assert (raised.value.item, "not the Merkle root" in raised.value.reason) == (METADATA_FILE, True)


def test_an_export_from_before_the_tree_verifies_and_reports_the_root_it_computes(ledger, tmp_path):
    with RocksStore(ledger, read_only=True, stopped=True) as store:
        metadata = export_store(store, tmp_path / "export")
    older = {name: value for name, value in metadata.items() if name != "journal_tree"}
    (tmp_path / "export" / METADATA_FILE).write_bytes(orjson.dumps(older, option=orjson.OPT_SORT_KEYS) + b"\n")
    assert verify_export(tmp_path / "export")["journal_tree"] == metadata["journal_tree"]


def test_replay_and_checkpoint_load_rebuild_the_same_tree(ledger, tmp_path):
    with RocksStore(ledger, read_only=True, stopped=True) as store:
        metadata = export_store(store, tmp_path / "export")
    assert replay_export(tmp_path / "export", tmp_path / "replayed")["journal_tree"] == metadata["journal_tree"]
    load_checkpoint(tmp_path / "export", tmp_path / "loaded")
    with RocksStore(tmp_path / "loaded", read_only=True, stopped=True) as store:
        assert journal_tree.stored_root(store, metadata["sequence"]) == metadata["journal_tree"]["root"]


def test_a_ledger_without_a_stored_tree_gets_it_built_from_its_journal_on_opening(ledger, tmp_path):
    data = _copy(ledger, tmp_path)
    with RocksStore(data) as store:
        store.write([(META, key, None) for key, _ in store.scan(META, b"merkle/")])
        expected = journal_nodes(_entry_hashes(store)).root().hex()
    with LedgerOwner.open(data) as owner:
        assert owner.executor.frontier.root().hex() == expected
        assert owner.executor.frontier.size == owner.head().sequence


def test_only_nodes_from_the_block_level_up_are_stored_and_every_size_proves_as_the_whole_tree(ledger):
    with RocksStore(ledger, read_only=True, stopped=True) as store:
        hashes = _entry_hashes(store)
        stored = [key for key, _ in store.scan(META, journal_tree.NODE_PREFIX)]
        nodes = journal_tree.StoredNodes(store.get)
        whole = journal_nodes(hashes)
        for size in range(1, len(hashes) + 1):
            assert tree.root_at(nodes, size) == tree.root_at(whole, size), size
            index = (size * 7) % size
            assert tree.inclusion_proof(nodes, index, size) == tree.inclusion_proof(whole, index, size), size
            assert tree.consistency_proof(nodes, size // 3, size) == tree.consistency_proof(whole, size // 3, size)
    expected = [journal_tree.node_key(level, index) for level in range(journal_tree.STORED_FROM_LEVEL, 20)
                for index in range(len(hashes) >> level)]
    assert sorted(stored) == sorted(expected) and len(stored) < len(hashes) // 8


def _block_node(store: RocksStore, after_last_full: int) -> bytes:
    """The key of the block node ``after_last_full`` blocks after the last full block (0: that block's own)."""
    full = orjson.loads(store.get(META, b"head"))["sequence"] // journal_tree.BLOCK
    return journal_tree.node_key(journal_tree.STORED_FROM_LEVEL, full - 1 + after_last_full)


def test_a_block_node_that_disagrees_with_its_entries_refuses_to_open_and_to_verify(ledger, tmp_path):
    data = _copy(ledger, tmp_path)
    with RocksStore(data) as store:
        store.write([(META, _block_node(store, 0), journal_tree.node_value(b"\x00" * 32))])
    with pytest.raises(StorageFault) as raised:
        LedgerOwner.open(data)
    assert (raised.value.code, "is not the root of its 16 journal entries" in raised.value.detail) == (
        ErrorCode.STORAGE_CORRUPT, True)
    assert porto_ledger("verify", data=data).status == 1


def test_a_missing_block_node_or_one_beyond_the_journal_refuses_to_open(ledger, tmp_path):
    data = _copy(ledger, tmp_path)
    with RocksStore(data) as store:
        beyond = _block_node(store, 1)
        store.write([(META, beyond, journal_tree.node_value(b"\x01" * 32))])
    with pytest.raises(StorageFault) as raised:
        LedgerOwner.open(data)
    assert "a block beyond the journal" in raised.value.detail
    with RocksStore(data) as store:
        store.write([(META, beyond, None), (META, _block_node(store, 0), None)])
    with pytest.raises(StorageFault) as raised:
        LedgerOwner.open(data)
    assert (raised.value.code, "is missing or torn" in raised.value.detail) == (ErrorCode.STORAGE_CORRUPT, True)


def test_a_tree_in_the_earlier_layout_is_rebuilt_once_without_its_leaf_rows(ledger, tmp_path):
    """The earlier layout kept every leaf and node and a frontier row, and had no layout row."""
    data = _copy(ledger, tmp_path)
    with RocksStore(data) as store:
        hashes = _entry_hashes(store)
        whole = journal_nodes(hashes)
        earlier = [(META, journal_tree.node_key(level, index), journal_tree.node_value(node))
                   for level, row in enumerate(whole.levels) for index, node in enumerate(row)]
        store.write([*earlier, (META, b"merkle/frontier", b"{}"), (META, journal_tree.LAYOUT_KEY, None)])
    with LedgerOwner.open(data) as owner:
        assert owner.executor.frontier.root() == whole.root()
        kept = owner.at_boundary(lambda store: [key for key, _ in store.scan(META, b"merkle/")])
    assert b"merkle/frontier" not in kept and journal_tree.node_key(0, 0) not in kept
    assert journal_tree.LAYOUT_KEY in kept and journal_tree.node_key(journal_tree.STORED_FROM_LEVEL, 0) in kept


def test_verify_reports_the_root_and_backups_record_it(ledger, tmp_path):
    data = _copy(ledger, tmp_path)
    report = verify_directory(data)
    with LedgerOwner.open(data) as owner:
        manifest = backup_owner(owner, tmp_path / "backup")
    assert manifest["journal_tree"] == report["journal_tree"]
    assert verify_backup(tmp_path / "backup")["journal_tree"]["size"] == report["sequence"]


def test_the_proof_verbs_print_documents_verify_proof_accepts_with_the_exported_root(ledger, tmp_path):
    with RocksStore(ledger, read_only=True, stopped=True) as store:
        metadata = export_store(store, tmp_path / "export")
    size = metadata["sequence"]
    inclusion = porto_ledger("prove-inclusion", 7, data=ledger)
    assert inclusion.status == 0
    assert (inclusion.last["sequence"], inclusion.last["tree_size"], inclusion.last["root"]) == (
        7, size, metadata["journal_tree"]["root"])
    at = porto_ledger("prove-inclusion", 7, "--at", 9, data=ledger).last
    consistency = porto_ledger("prove-consistency", 9, size, data=ledger).last
    assert consistency["first_root"] == at["root"] and consistency["second_root"] == metadata["journal_tree"]["root"]
    for name, document in (("inclusion", inclusion.last), ("at", at), ("consistency", consistency)):
        path = tmp_path / f"{name}.json"
        path.write_bytes(orjson.dumps(document, option=orjson.OPT_SORT_KEYS) + b"\n")
        checked = porto_ledger("verify-proof", path)
        assert (checked.status, checked.last["ok"]) == (0, True)
        assert verify_proof_document(path.read_bytes())["ok"]


def test_the_proof_verbs_refuse_entries_and_sizes_the_journal_lacks(ledger):
    head = porto_ledger("head", data=ledger).last["sequence"]
    for arguments in (("prove-inclusion", 0), ("prove-inclusion", head + 1), ("prove-inclusion", 5, "--at", 4),
                      ("prove-consistency", 5, head + 1), ("prove-consistency", 6, 5)):
        run = porto_ledger(*arguments, data=ledger)
        assert (run.status, run.last["code"]) == (2, "NOT_FOUND"), arguments


def test_an_entry_stages_nothing_until_it_fills_a_block_and_then_exactly_the_keys_appended_keys_names():
    frontier, hashes = journal_tree.empty_tree(), [f"{sequence:064x}" for sequence in range(1, 301)]
    for sequence, entry_hash in enumerate(hashes, start=1):
        staged: list[bytes] = []
        frontier = journal_tree.stage_append(lambda family, key, value: staged.append(key), frontier, entry_hash)
        assert staged == journal_tree.appended_keys(sequence), sequence
        assert bool(staged) == (sequence % journal_tree.BLOCK == 0)
    assert journal_tree.appended_keys(32) == [journal_tree.node_key(4, 1), journal_tree.node_key(5, 0)]
    assert frontier.root() == journal_nodes(hashes).root()


class NamesJournalTreePayload(Payload):
    journal_tree: JournalTreeClaim


@pytest.fixture
def names_journal_tree():
    """A test-only command that only names a journal tree, as a commitment observation does."""
    command("TestNamesJournalTree", payload=NamesJournalTreePayload, roles={"admin"})(lambda ctx, p: {})
    yield "TestNamesJournalTree"
    registry._REGISTRY.pop("TestNamesJournalTree")


def test_a_command_naming_the_tree_sees_the_entries_of_its_own_group_before_it(names_journal_tree, tmp_path,
                                                                                envelopes):
    registrations = [envelopes.account(f"acct-{number}") for number in range(20)]
    with LedgerOwner.open(tmp_path / "rehearsal", genesis=default_genesis()) as rehearsal:
        for envelope in registrations:
            rehearsal.submit(envelope)
        claimed = rehearsal.journal_tree()  # the same envelopes give the same entries anywhere
    naming = {size: envelopes(names_journal_tree, {"journal_tree": claim}) for size, claim in (
        ("all", claimed), ("one more", {**claimed, "size": claimed["size"] + 1}))}
    with LedgerOwner.open(tmp_path / "ledger", genesis=default_genesis()) as owner:
        release = threading.Event()
        owner.executor.call(lambda store: release.wait(30))  # the executor waits while the group queues up
        futures = [owner.submit_async(envelope) for envelope in (*registrations, *naming.values())]
        release.set()
        accepted, beyond = futures[-2].result(), futures[-1].exception()
        assert all(future.result().accepted for future in futures[:-2])
        assert accepted.accepted and accepted.sequence == claimed["size"] + 1
        assert beyond.code == ErrorCode.CONFLICTING_EVIDENCE
        assert owner.journal_tree() == {"size": claimed["size"] + 1,
                                        "root": journal_tree.stored_root(owner.store, claimed["size"] + 1)}


def test_asking_each_command_whether_it_names_the_tree_misses_no_model_attribute(tmp_path, monkeypatch):
    """Every command is asked twice; a miss on a pydantic model builds an AttributeError (about 4 µs each)."""
    misses = []
    original = BaseModel.__getattr__

    def counting(model, name):
        misses.append((type(model).__name__, name))
        return original(model, name)

    monkeypatch.setattr(BaseModel, "__getattr__", counting)
    envelopes = demo_envelopes(seed=5, listeners=3, days=1)
    with LedgerOwner.open(tmp_path / "ledger", genesis=demo_genesis()) as owner:
        outcomes = [future.result() for future in [owner.submit_async(envelope) for envelope in envelopes]]
    assert sum(outcome.accepted for outcome in outcomes) > len(envelopes) - 10
    assert misses == []
