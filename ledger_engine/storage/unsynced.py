"""The test tier's store: a RocksStore whose batches are not fsynced, and nothing else changed.

Checked reads, the witness, the owner lock and atomic batches are exactly the
production store's; only ``sync`` is off, so a unit test that asserts no
durability does not wait for the disk on every commit (docs/adr/0043).

It cannot be reached from production: nothing in ``ledger_engine``,
``porto_console``, ``scripts`` or ``benchmarks`` names the class or the
switch (tests/test_store_tier.py checks); its constructor refuses unless this
process called ``allow_in_this_process`` (only ``tests/conftest.py`` does, and
a child process never inherits it); and the owner refuses any unsynced store
on the same condition.
"""

from __future__ import annotations

import os
from typing import Any

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.storage.rocks import RocksStore

_allowed = False


def allow_in_this_process() -> None:
    """Called once by the test suite's conftest; never by the product."""
    global _allowed
    _allowed = True


def unsynced_allowed() -> bool:
    return _allowed


def refuse_unless_allowed(path: str | os.PathLike[str]) -> None:
    if not _allowed:
        raise LedgerError(ErrorCode.STORE_NOT_DURABLE,
                          f"a store that skips fsync may open {path} only inside the test suite")


class UnsyncedRocksStore(RocksStore):
    """Writes reach RocksDB's WAL and survive a killed process, but not a power cut."""

    synced = False

    def __init__(self, path: str | os.PathLike[str], **options: Any) -> None:
        refuse_unless_allowed(path)
        super().__init__(path, **options)
