"""RocksDB through rocksdict: column families, synchronous atomic batches, checkpoints.

rocksdict 0.3.29 has no TransactionDB and its snapshot iteration reads the live
database (docs/adr/0002). Consistency therefore comes from ownership: one
process holds the directory's LOCK and one executor thread writes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Iterator

from rocksdict import AccessType, Checkpoint, Options, Rdict, WriteBatch, WriteOptions

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import ALL_FAMILIES

# (family, key, value); a value of None deletes the key.
WriteOp = tuple[str, bytes, bytes | None]


def _options() -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    return options


def _family_options() -> dict[str, Options]:
    return {name: Options(raw_mode=True) for name in ALL_FAMILIES}


class RocksStore:
    """One opened ledger database: point reads, ordered scans and durable batches."""

    def __init__(self, path: str | os.PathLike, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        if read_only and not (self.path / "CURRENT").exists():
            raise LedgerError(ErrorCode.NOT_FOUND, f"no ledger database at {self.path}")
        try:
            self._db = Rdict(
                str(self.path),
                options=_options(),
                column_families=_family_options(),
                access_type=AccessType.read_only() if read_only else AccessType.read_write(),
            )
        except Exception as error:  # rocksdict raises a bare Exception for lock failures
            if "LOCK" in str(error) or "lock" in str(error):
                raise LedgerError(
                    ErrorCode.LEDGER_ALREADY_OWNED,
                    f"the ledger at {self.path} is already open read-write by another owner process",
                ) from None
            raise
        self._families = {name: self._db.get_column_family(name) for name in ALL_FAMILIES}
        self._handles = {name: self._db.get_column_family_handle(name) for name in ALL_FAMILIES}
        self._sync = WriteOptions()
        self._sync.sync = True
        self._closed = False

    def get(self, family: str, key: bytes) -> bytes | None:
        return self._families[family].get(key)

    def scan(self, family: str, prefix: bytes = b"", start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Keys starting with ``prefix`` in byte order, from ``start`` if given."""
        iterator = self._families[family].iter()
        iterator.seek(start if start is not None else prefix)
        while iterator.valid():
            key = iterator.key()
            if not key.startswith(prefix):
                return
            yield key, iterator.value()
            iterator.next()

    def write(self, ops: Iterable[WriteOp]) -> None:
        """Apply ``ops`` atomically, WAL on, synced to disk before returning."""
        batch = WriteBatch(raw_mode=True)
        for family, key, value in ops:
            if value is None:
                batch.delete(key, self._handles[family])
            else:
                batch.put(key, value, self._handles[family])
        self._db.write(batch, self._sync)

    def checkpoint(self, destination: str | os.PathLike) -> None:
        """A physical, hard-linked copy of the database as of now."""
        Checkpoint(self._db).create_checkpoint(str(destination))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            # Column-family objects hold the database open; drop them so the LOCK is released now.
            self._families.clear()
            self._handles.clear()
            self._db.close()

    def __enter__(self) -> "RocksStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def raw_sync_write_rate(path: str | os.PathLike, *, payload_bytes: int, writes: int) -> float:
    """Synchronous single-batch writes per second of ``payload_bytes`` each: the benchmark floor."""
    import time

    with RocksStore(path) as store:
        body = b"x" * payload_bytes
        started = time.perf_counter()
        for number in range(writes):
            store.write([("state", b"bench/%020d" % number, body)])
        return writes / (time.perf_counter() - started)
