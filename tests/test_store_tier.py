"""The store that skips fsync serves the test suite only, and changes nothing but the fsync.

The last tests are a contract both stores pass: what one does, the other does too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import STATE
from ledger_engine.storage import unsynced
from ledger_engine.storage.rocks import RocksStore, read_witness
from ledger_engine.storage.unsynced import UnsyncedRocksStore
from tests.support.step_up import genesis

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("ledger_engine", "porto_console", "scripts", "benchmarks")
TEST_ONLY_NAMES = ("UnsyncedRocksStore", "allow_in_this_process", "storage.unsynced import Unsynced")


@pytest.fixture
def switch_off(monkeypatch):
    monkeypatch.setattr(unsynced, "_allowed", False)


def test_an_unmarked_test_owns_its_ledger_through_the_store_that_skips_fsync(owner):
    assert type(owner.store) is UnsyncedRocksStore and not owner.store.synced


@pytest.mark.durable
def test_a_durable_test_owns_its_ledger_through_the_synced_store(owner):
    assert type(owner.store) is RocksStore and owner.store.synced


def test_without_the_switch_the_unsynced_store_is_refused_and_creates_nothing(tmp_path, switch_off):
    with pytest.raises(LedgerError) as refused:
        UnsyncedRocksStore(tmp_path / "ledger", create=True)
    assert refused.value.code == ErrorCode.STORE_NOT_DURABLE
    assert not (tmp_path / "ledger").exists()


def test_without_the_switch_the_owner_refuses_an_unsynced_store(tmp_path, monkeypatch):
    store = UnsyncedRocksStore(tmp_path / "ledger", create=True)
    monkeypatch.setattr(unsynced, "_allowed", False)
    try:
        with pytest.raises(LedgerError) as refused:
            LedgerOwner(store)
        assert refused.value.code == ErrorCode.STORE_NOT_DURABLE
    finally:
        store.close()


def test_a_child_process_never_inherits_the_switch(tmp_path):
    program = ("import sys\nfrom ledger_engine.storage.unsynced import UnsyncedRocksStore\n"
               "try:\n    UnsyncedRocksStore(sys.argv[1], create=True)\n"
               "except Exception as error:\n    print(error.code)\n")
    child = subprocess.run([sys.executable, "-c", program, str(tmp_path / "ledger")], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert child.stdout.strip() == "STORE_NOT_DURABLE", child.stderr


def test_what_the_unsynced_store_wrote_reads_back_through_the_synced_store(tmp_path):
    with LedgerOwner.open(tmp_path / "ledger", genesis=genesis()) as ledger:
        assert not ledger.store.synced
        rows = ledger.scan(STATE, limit=10**6)
    with RocksStore(tmp_path / "ledger", read_only=True) as store:
        assert rows and [(key.decode(), orjson.loads(value)) for key, value in store.scan(STATE)] == rows


def test_no_product_module_names_the_test_tier():
    offenders = [str(path.relative_to(ROOT)) for package in PRODUCT for path in (ROOT / package).rglob("*.py")
                 if path.name != "unsynced.py" and any(name in path.read_text() for name in TEST_ONLY_NAMES)]
    assert offenders == []


@pytest.fixture(params=[RocksStore, UnsyncedRocksStore], ids=["synced", "unsynced"])
def store_class(request):
    return request.param


def test_every_store_writes_atomically_reads_back_and_scans_in_key_order(tmp_path, store_class):
    with store_class(tmp_path / "db", create=True) as store:
        store.write([(STATE, b"b/2", b"two"), (STATE, b"a/1", b"one"), (STATE, b"b/1", b"first")])
        store.write([(STATE, b"b/2", None), (STATE, b"c/1", b"three")])
        assert store.get(STATE, b"b/2") is None and store.get(STATE, b"a/1") == b"one"
        assert list(store.scan(STATE, b"b/")) == [(b"b/1", b"first")]
        assert [key for key, _ in store.scan(STATE)] == [b"a/1", b"b/1", b"c/1"]


def test_every_store_moves_its_witness_and_reopens_with_what_it_wrote(tmp_path, store_class):
    with store_class(tmp_path / "db", create=True) as store:
        for number in range(3):
            store.write([(STATE, b"k/%d" % number, b"v")])
    assert read_witness(tmp_path / "db") == 3
    with RocksStore(tmp_path / "db", read_only=True) as reopened:
        assert [key for key, _ in reopened.scan(STATE, b"k/")] == [b"k/0", b"k/1", b"k/2"]
