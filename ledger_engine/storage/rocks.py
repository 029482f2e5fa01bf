"""RocksDB through rocksdict: column families, synchronous atomic batches, checkpoints.

rocksdict 0.3.29 has no TransactionDB and its snapshot iteration reads the live
database (docs/adr/0002). Consistency therefore comes from ownership: one
process holds the directory's LOCK and one executor thread writes.

Storage is never trusted blindly (docs/adr/0010):

- Only ``create=True`` (``init``, and building a new ledger by replay or
  restore) creates a database, and only in a missing or empty directory.
- Every open first opens the directory read-only, with RocksDB's info log sent
  elsewhere, so a damaged directory is refused before anything in it is
  written; paranoid checks make RocksDB verify every SST it lists. A table
  file the MANIFEST no longer lists, beside a MANIFEST whose tail is torn, is
  flushed data whose record was lost, and refused too (docs/adr/0081). The
  caller's own ``check`` runs on that read-only open, before the read-write one.
- Every point read and scan verifies block checksums and checks the iterator's
  status when it stops: a damaged block is a ``StorageFault`` naming the
  column family and key range, never a short answer.
- Every batch carries a write number; after it is durable the number goes to
  a small witness file beside the database. A database that opens behind its
  witness lost acknowledged writes (a truncated or deleted WAL) and is refused.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
import zlib
from pathlib import Path
from typing import Callable, Iterable, Iterator

from rocksdict import (
    AccessType, BlockBasedOptions, Cache, Checkpoint, DBRecoveryMode, Options, ReadOptions, Rdict, WriteBatch, WriteOptions,
)

from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.layout import ALL_FAMILIES, META
from ledger_engine.storage.memory import return_large_frees

# (family, key, value); a value of None deletes the key.
WriteOp = tuple[str, bytes, bytes | None]

WRITES_KEY = b"storage/writes"
WITNESS_FILE = "PORTO-WITNESS"
# flock(2), not RocksDB's POSIX LOCK: an offline reader can test it without ever releasing an owner's lock.
OWNER_FILE = "PORTO-OWNER"
_WITNESS_FORMAT = b"porto-witness/1 %020d %08x\n"
_WITNESS_PATTERN = re.compile(rb"porto-witness/1 (\d{20}) ([0-9a-f]{8})\n")
# What RocksDB may hold in memory for one open ledger, whatever the ledger's size (docs/adr/0068): the memtables
# of all families together, and one block cache the families share. RocksDB's defaults are per family, 64 MiB
# of memtables (twice over) and a block cache each: ten families let a replay of 10^5 commands grow past 300 MiB.
# A ledger being built (replay) flushes at a quarter of the budget of one in service, where fewer flushes keep
# group commit about 5% faster. It reads little but what it just wrote, which is in its memtables, and keys that
# do not exist, which the tables' filters answer: a quarter of the cache serves it (docs/adr/0070).
MEMTABLE_BUDGET_BYTES = 64 << 20
STAGING_MEMTABLE_BUDGET_BYTES = 16 << 20
BLOCK_CACHE_BYTES = 8 << 20
STAGING_BLOCK_CACHE_BYTES = 2 << 20
BLOOM_BITS_PER_KEY = 10  # about 1% false positives, 1.25 bytes per key held beside the table's index
TABLE_FORMAT_VERSION = 6
# RocksDB's log format (db/log_format.h), which its MANIFEST is written in.
_LOG_BLOCK = 32 * 1024
_LOG_HEADER = 7
_LOG_FIRST, _LOG_MIDDLE = 2, 3


def _options(*, create: bool, memtable_budget: int, log_dir: str | None = None) -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(create)
    options.create_missing_column_families(True)
    options.set_paranoid_checks(True)
    # An incomplete last record is a write that never returned; anything else damaged is refused.
    options.set_wal_recovery_mode(DBRecoveryMode.tolerate_corrupted_tail_records())
    # RocksDB opens each column family's table files on a pool of this many threads, started and joined per
    # family: at the default 16, starting threads was most of an open (about 21 ms against 11 ms with one, on a
    # ledger of a few SSTs); a ledger's own few, large SSTs open one after another in milliseconds.
    options.set_max_file_opening_threads(1)
    options.set_db_write_buffer_size(memtable_budget)
    if log_dir is not None:
        options.set_db_log_dir(log_dir)
    return options


def _family_options(cache_bytes: int) -> dict[str, Options]:
    tables = BlockBasedOptions()
    tables.set_block_cache(Cache(cache_bytes))
    # Most reads of a command ask for keys that do not exist yet (IDs, uniqueness sentinels); a table's filter
    # answers those without reading its blocks (docs/adr/0071). A filter failing its checksum is dropped and the
    # blocks are read instead; format 6 ties each block's checksum to its file and offset, so a filter copied
    # from elsewhere fails it too (under format 5 another table's filter passed and hid keys that exist).
    tables.set_bloom_filter(BLOOM_BITS_PER_KEY, False)
    tables.set_format_version(TABLE_FORMAT_VERSION)
    return {name: _with_tables(tables) for name in ALL_FAMILIES}


def _with_tables(tables: BlockBasedOptions) -> Options:
    options = Options(raw_mode=True)
    options.set_block_based_table_factory(tables)
    return options


def _read_options() -> ReadOptions:
    options = ReadOptions()
    options.set_verify_checksums(True)
    return options


def _first_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:400]


def open_error(path: Path, error: BaseException) -> LedgerError:
    """A stable code for RocksDB's refusal to open ``path``."""
    text = _first_line(error)
    if re.search(r"/LOCK\b|While lock file|lock hold by current process", text):
        return LedgerError(ErrorCode.LEDGER_ALREADY_OWNED,
                           f"the ledger at {path} is already open read-write by another owner process")
    missing = re.search(r"([\w./-]+): No such file or directory", text)
    if missing:
        return StorageFault(ErrorCode.STORAGE_INCOMPLETE, f"{Path(missing.group(1)).name} is missing from {path}")
    return StorageFault(ErrorCode.STORAGE_CORRUPT, f"{path} cannot be opened: {text}")


def require_database_files(path: Path) -> None:
    """Refuse, naming it, a directory without CURRENT or without the MANIFEST that CURRENT names."""
    if not path.is_dir() or not any(path.iterdir()):
        raise StorageFault(ErrorCode.LEDGER_NOT_FOUND, f"no ledger at {path}")
    current = path / "CURRENT"
    if not current.is_file():
        raise StorageFault(ErrorCode.STORAGE_INCOMPLETE, f"CURRENT is missing from {path}")
    manifest = current.read_bytes().decode("ascii", "replace").strip()
    if not re.fullmatch(r"MANIFEST-\d+", manifest):
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"CURRENT in {path} does not name a MANIFEST")
    if not (path / manifest).is_file():
        raise StorageFault(ErrorCode.STORAGE_INCOMPLETE, f"{manifest} named by CURRENT is missing from {path}")


def manifest_ends_cleanly(manifest: bytes) -> bool:
    """Whether a MANIFEST ends where its last record does, as RocksDB writes it.

    A MANIFEST is a RocksDB log: 32 KiB blocks of records, each a 7-byte header (checksum, 2-byte length, type)
    and its payload; under 7 bytes left in a block are zero padding. RocksDB's recovery reads a header or payload
    cut off by the end of the file, or a record split over blocks without its last piece, as the end of the
    MANIFEST, silently; here they are a torn tail. The checksums of whole records RocksDB has already checked.
    """
    offset, in_pieces = 0, False
    while offset < len(manifest):
        left_in_block = _LOG_BLOCK - offset % _LOG_BLOCK
        if left_in_block < _LOG_HEADER:
            offset += left_in_block
            continue
        header = manifest[offset:offset + _LOG_HEADER]
        if len(header) < _LOG_HEADER:
            return False
        length, kind = int.from_bytes(header[4:6], "little"), header[6]
        if kind == 0 or _LOG_HEADER + length > left_in_block or offset + _LOG_HEADER + length > len(manifest):
            return False
        in_pieces = kind in (_LOG_FIRST, _LOG_MIDDLE)
        offset += _LOG_HEADER + length
    return not in_pieces


def read_witness(path: Path) -> int | None:
    """The last write number known durable; None when absent or torn (the file is never synced)."""
    try:
        raw = (path / WITNESS_FILE).read_bytes()
    except FileNotFoundError:
        return None
    match = _WITNESS_PATTERN.fullmatch(raw)
    if match is None or int(match.group(2), 16) != zlib.crc32(match.group(1)):
        return None
    return int(match.group(1))


class RocksStore:
    """One opened ledger database: point reads, ordered scans and durable batches."""

    # Every batch is fsynced before ``write`` returns; only the test tier's store (docs/adr/0043) and a store
    # still being built (``staging``) say otherwise.
    synced = True

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False, create: bool = False,
                 stopped: bool = False, staging: bool = False,
                 check: Callable[["RocksStore"], object] | None = None) -> None:
        """``stopped`` (offline tools): refuse while an owner holds the ledger, and keep one from starting
        until this store closes. Without it a read-only store is a view beside a live owner.

        ``check``: called with this store while it still reads through the read-only open, after every storage
        check and with the owner lock held, before an existing database is opened read-write; whatever it
        raises refuses the open with nothing in the directory written (the owner's own checks, docs/adr/0081).

        ``staging``: a ledger being built in a directory nothing reads yet, which ``publish_built`` syncs file by
        file before giving it its name (or which is thrown away): its batches are not fsynced one by one, since
        none is acknowledged before then, and no owner accepts it (docs/adr/0068)."""
        self.path = Path(path)
        self.read_only = read_only
        self.stopped = stopped
        self.staging = staging
        assert not (read_only and staging), "a staging store is written"
        if staging:
            self.synced = False
        # Called with every StorageFault before it is raised; the owner halts admission there.
        self.on_fault: Callable[[StorageFault], None] | None = None
        self._log_dir: str | None = None
        self._witness_fd: int | None = None
        self._owner_fd: int | None = None
        self._closed = False
        assert not (read_only and create), "a read-only open never creates"
        if create and (not self.path.exists() or not any(self.path.iterdir())):
            self.path.mkdir(parents=True, exist_ok=True)
            self._db = self._open(read_only=False, create=True)
            self._take_owner_lock(exclusive=True)  # RocksDB's LOCK already keeps any other owner out
        else:
            self._db = self._open_existing(check)
        self._bind(self._db)
        self._reads = _read_options()
        self._sync = WriteOptions()
        self._sync.sync = self.synced
        self._writes = self._stored_writes()

    # Opening.
    def _open(self, *, read_only: bool, create: bool = False) -> Rdict:
        """Open with a private info-log directory when read-only, so the directory stays untouched."""
        if read_only:
            self._log_dir = tempfile.mkdtemp(prefix="porto-rocks-log-")
        budget, cache = ((STAGING_MEMTABLE_BUDGET_BYTES, STAGING_BLOCK_CACHE_BYTES) if self.staging
                         else (MEMTABLE_BUDGET_BYTES, BLOCK_CACHE_BYTES))
        return_large_frees()
        try:
            return Rdict(str(self.path), options=_options(create=create, memtable_budget=budget,
                                                          log_dir=self._log_dir),
                         column_families=_family_options(cache),
                         access_type=AccessType.read_only(False) if read_only else AccessType.read_write())
        except Exception as error:  # rocksdict raises a bare Exception for every RocksDB status
            self._drop_log_dir()
            raise open_error(self.path, error) from None

    def _open_existing(self, check: Callable[["RocksStore"], object] | None) -> Rdict:
        require_database_files(self.path)
        witness = read_witness(self.path)  # before the database: a live writer only moves it forward
        probe = self._open(read_only=True)
        try:
            if not (self.read_only and not self.stopped and self._owner_is_live()):
                self._require_tables_listed(probe)
            self._require_not_behind(probe, witness)
            if not self.read_only or self.stopped:
                self._take_owner_lock(exclusive=not self.read_only)
            if check is not None:
                self._check_read_only(probe, check)
        except BaseException:
            probe.close()
            self._release_owner_lock()
            self._drop_log_dir()
            raise
        if self.read_only:
            return probe
        probe.close()
        self._drop_log_dir()
        try:
            return self._open(read_only=False)
        except BaseException:
            self._release_owner_lock()
            raise

    def _bind(self, db: Rdict) -> None:
        self._families = {name: db.get_column_family(name) for name in ALL_FAMILIES}
        self._handles = {name: db.get_column_family_handle(name) for name in ALL_FAMILIES}

    def _check_read_only(self, probe: Rdict, check: Callable[["RocksStore"], object]) -> None:
        """``check`` on this store reading through ``probe``; a write in it fails, the database being read-only."""
        self._bind(probe)
        self._reads = _read_options()
        writable, self.read_only = self.read_only, True
        try:
            check(self)
        finally:
            self.read_only = writable
            self._families.clear()  # they hold the probe open
            self._handles.clear()

    def _owner_is_live(self) -> bool:
        """Whether an owner holds the directory now (its files then change under a view beside it)."""
        try:
            fd = os.open(self.path / OWNER_FILE, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # drops only this descriptor's shared lock

    def _require_tables_listed(self, db: Rdict) -> None:
        """Refuse table files no MANIFEST record lists beside a MANIFEST with a torn tail (docs/adr/0081).

        RocksDB reads a MANIFEST cut short as ending early and forgets the flushes recorded after the cut; their
        tables are then on disk but listed nowhere, and a read-write open deletes them. A flush or compaction
        killed before its record was written leaves such a table too, beside a MANIFEST that ends cleanly:
        its rows are still in the write-ahead log, or in the tables it was compacting, so that is harmless.
        """
        live = {Path(table["name"]).name for table in db.live_files()}
        unlisted = sorted(table.name for table in self.path.glob("*.sst") if table.name not in live)
        if not unlisted:
            return
        manifest = (self.path / "CURRENT").read_bytes().decode("ascii", "replace").strip()
        if manifest_ends_cleanly((self.path / manifest).read_bytes()):
            return
        raise StorageFault(
            ErrorCode.STORAGE_CORRUPT,
            f"{manifest} in {self.path} ends in a torn record and lists none of {', '.join(unlisted)}: "
            "the records of flushed tables were lost (docs/storage-recovery.md)")

    def _take_owner_lock(self, *, exclusive: bool) -> None:
        """The owner holds it exclusively, offline readers shared: neither runs beside the other."""
        path = self.path / OWNER_FILE
        if not exclusive and not path.exists():
            return  # no owner has ever opened this directory; a reader creates nothing
        self._owner_fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._owner_fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            self._release_owner_lock()
            held = ("is already open read-write by another owner process, or an offline tool is reading it"
                    if exclusive else "is already open read-write by another owner process")
            raise LedgerError(ErrorCode.LEDGER_ALREADY_OWNED, f"the ledger at {self.path} {held}") from None

    def _release_owner_lock(self) -> None:
        if self._owner_fd is not None:
            os.close(self._owner_fd)
            self._owner_fd = None

    def _require_not_behind(self, db: Rdict, witness: int | None) -> None:
        try:
            raw = db.get_column_family(META).get(WRITES_KEY, read_opt=_read_options())
        except Exception as error:
            raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"meta/{WRITES_KEY.decode()} unreadable: {_first_line(error)}") from None
        stored = int(raw) if raw is not None else 0
        if witness is not None and witness > stored:
            raise StorageFault(
                ErrorCode.STORAGE_ROLLED_BACK,
                f"{self.path} holds writes up to {stored} but write {witness} was acknowledged: "
                "the write-ahead log or an SST lost acknowledged data (docs/storage-recovery.md)")

    def _stored_writes(self) -> int:
        raw = self.get(META, WRITES_KEY)
        return int(raw) if raw is not None else 0

    # Reads.
    def _fault(self, code: ErrorCode, detail: str) -> StorageFault:
        fault = StorageFault(code, detail)
        if self.on_fault is not None:
            self.on_fault(fault)
        return fault

    def get(self, family: str, key: bytes) -> bytes | None:
        try:
            return self._families[family].get(key, read_opt=self._reads)
        except Exception as error:  # a checksum or I/O error on this key's block
            raise self._fault(ErrorCode.STORAGE_CORRUPT,
                              f"reading {family}/{key.decode(errors='replace')}: {_first_line(error)}") from None

    def scan(self, family: str, prefix: bytes = b"", start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Keys starting with ``prefix`` in byte order, from ``start`` if given; never silently short."""
        iterator = self._families[family].iter(self._reads)
        last = start if start is not None else prefix
        try:
            iterator.seek(last)
            while iterator.valid():
                key = iterator.key()
                if not key.startswith(prefix):
                    return
                value = iterator.value()
                last = key
                yield key, value
                iterator.next()
            iterator.status()
        except StorageFault:
            raise
        except Exception as error:
            raise self._fault(
                ErrorCode.STORAGE_CORRUPT,
                f"scanning {family} prefix {prefix.decode(errors='replace')!r} after "
                f"{last.decode(errors='replace')!r}: {_first_line(error)}") from None

    def int_property(self, family: str, name: str) -> int:
        """One of RocksDB's integer properties of ``family``, such as ``rocksdb.cur-size-all-mem-tables``."""
        value = self._families[family].property_int_value(name)
        assert value is not None, f"RocksDB has no integer property {name!r}"
        return value

    # Writes.
    def write(self, ops: Iterable[WriteOp]) -> None:
        """Apply ``ops`` atomically, WAL on, synced to disk before returning; then move the witness."""
        assert not self.read_only, "a read-only store never writes"
        batch = WriteBatch(raw_mode=True)
        for family, key, value in ops:
            assert not (family == META and key == WRITES_KEY), "the write number belongs to the store"
            if value is None:
                batch.delete(key, self._handles[family])
            else:
                batch.put(key, value, self._handles[family])
        number = self._writes + 1
        batch.put(WRITES_KEY, b"%d" % number, self._handles[META])
        try:
            self._db.write(batch, self._sync)
        except Exception as error:  # uncertain: the caller halts; damage RocksDB found is named as such
            if "Corruption" in str(error):
                raise self._fault(ErrorCode.STORAGE_CORRUPT, f"writing a batch: {_first_line(error)}") from None
            raise
        self._writes = number
        self._move_witness(number)

    def _move_witness(self, number: int) -> None:
        """Not synced: it survives a killed process, and after power loss it can only lag or be torn."""
        if self._witness_fd is None:
            self._witness_fd = os.open(self.path / WITNESS_FILE, os.O_WRONLY | os.O_CREAT, 0o644)
        digits = b"%020d" % number
        os.pwrite(self._witness_fd, _WITNESS_FORMAT % (number, zlib.crc32(digits)), 0)

    def flush(self) -> None:
        """Write every memtable to SST files (tests use it to get several SSTs from a small ledger)."""
        for family in self._families.values():
            family.flush()

    def checkpoint(self, destination: str | os.PathLike[str]) -> None:
        """A physical, hard-linked copy of the database as of now."""
        try:
            Checkpoint(self._db).create_checkpoint(str(destination))
        except Exception as error:
            if "Corruption" in str(error):
                raise self._fault(ErrorCode.STORAGE_CORRUPT, f"taking a checkpoint: {_first_line(error)}") from None
            raise

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            # Column-family objects hold the database open; drop them so the LOCK is released now.
            self._families.clear()
            self._handles.clear()
            try:
                self._db.close()
            except Exception as error:  # closing flushes: damage found then is named, and nothing is left held
                raise self._fault(ErrorCode.STORAGE_CORRUPT, f"closing: {_first_line(error)}") from None
            finally:
                if self._witness_fd is not None:
                    os.close(self._witness_fd)
                self._release_owner_lock()
                self._drop_log_dir()

    def _drop_log_dir(self) -> None:
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None

    def __enter__(self) -> "RocksStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def raw_sync_write_rate(path: str | os.PathLike[str], *, payload_bytes: int, writes: int) -> float:
    """Synchronous single-batch writes per second of ``payload_bytes`` each: the benchmark floor."""
    import time

    with RocksStore(path, create=True) as store:
        body = b"x" * payload_bytes
        started = time.perf_counter()
        for number in range(writes):
            store.write([("state", b"bench/%020d" % number, body)])
        return writes / (time.perf_counter() - started)
