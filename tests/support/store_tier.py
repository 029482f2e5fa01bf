"""The fast tier: in-process ledgers opened by tests that assert no durability skip fsync (docs/adr/0043).

The production modules that open a ledger read-write name ``RocksStore``
directly; the tier swaps that name for ``UnsyncedRocksStore`` in exactly
these modules for one test. Processes a test starts (``porto-ledger``, the
console server, workers) always run the synced store: the switch lives in
this process only.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import pytest

from ledger_engine.application import owner
from ledger_engine.checkpoint import backup, load
from ledger_engine.storage.unsynced import UnsyncedRocksStore, allow_in_this_process

# Every module in which a test's process opens a ledger read-write.
READ_WRITE_OPENERS = (owner, load, backup)

# Tests that assert durability, or kill processes, keep the synced store.
DURABLE_MARKERS = ("durable", "slow_kill")


def enable() -> None:
    allow_in_this_process()


def wants_synced_store(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) is not None for name in DURABLE_MARKERS)


@contextmanager
def store_for(item: pytest.Item) -> Iterator[None]:
    """Around one test's setup, call and teardown, so the fixtures it builds first share its tier."""
    if wants_synced_store(item):
        yield
        return
    patch = pytest.MonkeyPatch()
    for module in READ_WRITE_OPENERS:
        patch.setattr(module, "RocksStore", UnsyncedRocksStore)
    try:
        yield
    finally:
        patch.undo()
