"""The fold of an export's deltas, kept in a scratch store: verifying needs memory for a chunk, not for the state.

Each address (column family, key) a delta writes maps to the SHA-256 of its
latest value's canonical bytes. Logical rows are stored under
``family NUL key``, so a scan returns them in the order of the exported state
rows (family bytes, then key bytes); events keep their own keys.

Beside the digests it keeps, for the rows a reader asks it to (``keep``), the
latest value's stored bytes, under the same ``family NUL key`` in another
family of the scratch store: what recomputing a frozen chunk reads of the
state as folded so far (``get_raw``, as a ``PendingBatch`` reads it).
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ledger_engine.layout import EVENTS, INDEXES, STATE
from ledger_engine.storage.rocks import RocksStore

CHUNK = 10_000
SEPARATOR = b"\x00"
VALUES = INDEXES  # the scratch store's family of kept values

Address = tuple[str, str]


class DiskFold:
    def __init__(self, store: RocksStore) -> None:
        self._store = store
        self._pending: dict[tuple[str, bytes], bytes | None] = {}

    @classmethod
    @contextmanager
    def scratch(cls) -> Iterator["DiskFold"]:
        directory = Path(tempfile.mkdtemp(prefix="porto-fold-"))
        try:
            with RocksStore(directory / "db", create=True, staging=True) as store:
                yield cls(store)
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def set(self, address: Address, digest: bytes | None) -> None:
        """``digest`` of the address's new value, or None when the delta deletes it."""
        self._pending[_location(address)] = digest
        if len(self._pending) >= CHUNK:
            self._flush()

    def get(self, address: Address) -> bytes | None:
        return self._read(_location(address))

    def keep(self, address: Address, value: bytes | None) -> None:
        """The address's new value as stored, or None when the delta deletes it."""
        self._pending[(VALUES, _joined(*address))] = value
        if len(self._pending) >= CHUNK:
            self._flush()

    def get_raw(self, family: str, key: bytes) -> bytes | None:
        """The kept value of (``family``, ``key``) as folded so far; None for a row never kept."""
        return self._read((VALUES, family.encode() + SEPARATOR + key))

    def _read(self, location: tuple[str, bytes]) -> bytes | None:
        if location in self._pending:
            return self._pending[location]
        return self._store.get(*location)

    def addresses(self, *, events: bool) -> Iterator[Address]:
        """Every folded address of the events, or of the logical rows, in export order."""
        self._flush()
        for key, _ in self._store.scan(EVENTS if events else STATE):
            if events:
                yield EVENTS, key.decode()
            else:
                family, _, name = key.partition(SEPARATOR)
                yield family.decode(), name.decode()

    def _flush(self) -> None:
        if self._pending:
            self._store.write([(family, key, digest) for (family, key), digest in self._pending.items()])
            self._pending = {}


def _location(address: Address) -> tuple[str, bytes]:
    family, key = address
    if family == EVENTS:
        return EVENTS, key.encode()
    return STATE, _joined(family, key)


def _joined(family: str, key: str) -> bytes:
    return family.encode() + SEPARATOR + key.encode()
