"""A ledger still being built skips the per-batch fsync and is synced whole before it is named; every open
ledger's RocksDB memory is bounded whatever the ledger's size (docs/adr/0068)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint import publish
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import ALL_FAMILIES
from ledger_engine.storage.rocks import (
    BLOCK_CACHE_BYTES, MEMTABLE_BUDGET_BYTES, STAGING_BLOCK_CACHE_BYTES, STAGING_MEMTABLE_BUDGET_BYTES, RocksStore,
)
from tests.engine.test_export_properties import small_export  # noqa: F401 (fixture)


def test_no_owner_accepts_a_ledger_still_being_built(tmp_path):
    with RocksStore(tmp_path / "staging", create=True, staging=True) as store:
        assert not store.synced
        with pytest.raises(LedgerError) as refused:
            LedgerOwner(store)
    assert refused.value.code == ErrorCode.STORE_NOT_DURABLE


def test_a_replay_syncs_every_file_of_the_rebuilt_ledger_after_its_last_write_and_before_naming_it(
        small_export, tmp_path, monkeypatch):  # noqa: F811
    """The replay's batches are not synced one by one, so the one sync of the whole directory is what makes
    the published ledger durable: every file in it must be synced after the store closed, and before the
    rename gives it its name."""
    events: list[tuple[str, str]] = []
    real_fsync, real_close, real_rename = os.fsync, RocksStore.close, Path.rename

    def fsync(descriptor: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{descriptor}")))
        real_fsync(descriptor)

    def close(store: RocksStore) -> None:
        real_close(store)
        events.append(("closed", str(store.path)))

    def rename(path: Path, target: Path) -> Path:
        events.append(("renamed", str(path)))
        return real_rename(path, target)

    monkeypatch.setattr(publish.os, "fsync", fsync)
    monkeypatch.setattr(RocksStore, "close", close)
    monkeypatch.setattr(Path, "rename", rename)
    target = tmp_path / "replayed"

    replay_export(small_export, target)

    staging = next(path for kind, path in events if kind == "renamed")
    closed = events.index(("closed", staging))
    renamed = events.index(("renamed", staging))
    synced = {Path(path).name for kind, path in events[closed:renamed] if kind == "fsync"}
    published = {path.name for path in target.rglob("*") if path.is_file()}
    assert published and published <= synced, sorted(published - synced)


@pytest.mark.parametrize(("staging", "budget"), [(True, STAGING_MEMTABLE_BUDGET_BYTES), (False, MEMTABLE_BUDGET_BYTES)])
def test_the_memtables_of_all_families_stay_within_one_budget(tmp_path, staging, budget):
    """Without the budget each family keeps up to two 64 MiB memtables: writes of three budgets to three families
    would stay in memory. Counted are the memtables still taking writes: those already full wait for a flush
    that runs in the background, later on a busy machine, and RocksDB stalls writers if too many wait. A family
    whose last memtable is still being flushed takes writes past the budget until that flush ends: twice the
    budget is the allowance, against three times without it."""
    families = ALL_FAMILIES[1:4]
    with RocksStore(tmp_path / "ledger", create=True, staging=staging) as store:
        highest = 0
        for number in range(3 * budget // 300_000):
            store.write([(family, b"entry/%06d" % number, os.urandom(100_000)) for family in families])
            highest = max(highest, sum(store.int_property(family, "rocksdb.cur-size-active-mem-table")
                                       for family in ALL_FAMILIES))
    assert highest <= 2 * budget, (highest, budget)


@pytest.mark.parametrize(("staging", "cache"), [(True, STAGING_BLOCK_CACHE_BYTES), (False, BLOCK_CACHE_BYTES)])
def test_the_families_share_one_block_cache_of_the_set_size(tmp_path, staging, cache):
    with RocksStore(tmp_path / "ledger", create=True, staging=staging) as store:
        for number in range(200):
            store.write([(family, b"row/%06d" % number, os.urandom(20_000)) for family in ALL_FAMILIES[1:4]])
        store.flush()
        for family in ALL_FAMILIES[1:4]:
            assert sum(1 for _ in store.scan(family)) == 200
        capacities = {store.int_property(family, "rocksdb.block-cache-capacity") for family in ALL_FAMILIES}
        usages = {store.int_property(family, "rocksdb.block-cache-usage") for family in ALL_FAMILIES}
    assert capacities == {cache}
    assert len(usages) == 1 and 0 < usages.pop() <= cache


_FREES_AFTER_OPEN = """
import ctypes, sys
from ledger_engine.storage.rocks import RocksStore

if sys.argv[2] == "open":
    RocksStore(sys.argv[1], create=True).close()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
BLOCK = 4 << 20

def resident_kib():
    with open("/proc/self/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS:")).split()[1])

libc.free(libc.malloc(BLOCK))  # glibc's default raises its mmap threshold to the size of a mapped block freed
blocks = [libc.malloc(BLOCK) for _ in range(16)]
for block in blocks:
    ctypes.memset(block, 1, BLOCK)
pinned = libc.malloc(256 << 10)  # from the top of the heap, above them: freeing them cannot shrink it
before = resident_kib()
for block in blocks:
    libc.free(block)
print(before - resident_kib())
"""


@pytest.mark.parametrize("opened", ["open", "closed"])
def test_a_process_that_opened_a_ledger_gives_freed_large_blocks_back_to_the_system(tmp_path, opened):
    """RocksDB frees its memtables' blocks at every flush; glibc's default keeps such blocks, once one was freed,
    in a heap it does not give back, so a replay's memory grew with its length (docs/adr/0070). Freed 64 MiB
    of 4 MiB blocks must leave a process that opened a ledger, and stay in one that did not (the default)."""
    freed = subprocess.run([sys.executable, "-c", _FREES_AFTER_OPEN, str(tmp_path / "ledger"), opened],
                           capture_output=True, text=True, check=True)
    returned_mib = int(freed.stdout) / 1024
    if opened == "open":
        assert returned_mib >= 60, returned_mib
    else:
        assert returned_mib < 4, returned_mib
