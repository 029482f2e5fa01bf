"""A signed-transaction journal: every transaction a worker signs, on disk before it can be broadcast.

It lives outside the ledger (its own file, normally on other storage) so
that after a ledger restore the chain can still be compared with everything
that was ever signed, including what was signed after the backup was taken.
Records are appended under an exclusive file lock, one canonical JSON line
each, fsynced before ``sign_next`` or ``append`` returns, and hash-chained so
that a truncated or edited journal is detected when it is read.

Each record names its ``subject`` (the payment or the batch it carries out)
and its sender's sequence number; ``sign_next`` is the session's memory of a
subject's last transaction and the sequence allocator shared by worker
processes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, ClassVar, Generic, Iterator, Protocol, TypeVar

import orjson

from ledger_engine.canonical import canonical_bytes, domain_hash

GENESIS = "0" * 64


TRANSACTION_JOURNALLED = "TRANSACTION_JOURNALLED"
SEQUENCE_LIVE = "SEQUENCE_LIVE"


class JournalCorrupt(Exception):
    """The journal's chain is broken at the named line."""


class JournalConflict(Exception):
    """A record the journal refuses: its ``code`` says why, and nothing was written.

    ``TRANSACTION_JOURNALLED``: its transaction hash is journalled already.
    ``SEQUENCE_LIVE``: another transaction that can still land holds its sender sequence.
    """

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(code, detail)
        self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.args[1]}"


class SignedRecord(Protocol):
    transaction_hash: str
    sender: str
    sequence_number: int
    expiration_secs: int
    signed_bytes: bytes

    @property
    def subject(self) -> str: ...

    def payload_json(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=SignedRecord)


def lowest_free_sequence(chain_sequence: int, held: Callable[[int], bool]) -> int:
    """The lowest sequence from the chain's next one up that no transaction able to land still ``held``."""
    sequence = chain_sequence
    while held(sequence):
        sequence += 1
    return sequence


class SignedBytes:
    """A record's signed bytes, kept as ``signed_bytes_hex``, and their SHA-256 (the evidence hash)."""

    __slots__ = ()
    signed_bytes_hex: str

    @property
    def signed_bytes(self) -> bytes:
        return bytes.fromhex(self.signed_bytes_hex)

    @property
    def signed_bytes_sha256(self) -> str:
        return hashlib.sha256(self.signed_bytes).hexdigest()


class SignedJournal(Generic[R]):
    """One journal file of ``record_type`` lines; an instance remembers how far it has read.

    The file adapter of ``journal_port.JournalPort``: one host, every process
    on it sharing the file's lock.
    """

    domain: ClassVar[str]
    record_type: ClassVar[type]

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._offset = 0
        self._last_hash = GENESIS
        self._expiries: dict[str, dict[int, int]] = {}  # sender -> sequence -> latest expiry (seconds)
        self._last_by_subject: dict[str, R] = {}
        self._hashes: set[str] = set()
        self._holder: int | None = None  # the thread that holds the exclusive lock through this instance

    @property
    def location(self) -> str:
        return str(self.path)

    def sign_next_for(self, subject: str, *, sender: str, chain_sequence: int, chain_time_secs: int,
                      reuse: Callable[[R], bool], sign: Callable[[int], R]) -> tuple[R, bool]:
        """The subject's last signed record if ``reuse`` accepts it, else a new one; True when new.

        All under the journal's lock, so concurrent deliveries of one subject
        agree on one transaction. A new one takes the lowest sequence from the
        chain's next one up at which no journalled transaction can still land
        (none, or all expired by chain time), so workers in any number of
        processes never sign two live transactions at one sequence.
        """
        with self._locked() as fd:
            last = self._last_by_subject.get(subject)
            if last is not None and reuse(last):
                return last, False
            taken = self._expiries.get(sender, {})

            def held(sequence: int) -> bool:
                return taken.get(sequence, 0) > chain_time_secs

            record = sign(lowest_free_sequence(chain_sequence, held))
            self._write(fd, record)
            return record, True

    def last_for(self, subject: str) -> R | None:
        """The subject's last signed record, as every process sees it now."""
        with self._locked():
            return self._last_by_subject.get(subject)

    def append(self, record: R) -> None:
        """Append one record durably; returns only after the line is fsynced."""
        with self._locked() as fd:
            self._write(fd, record)

    def records(self) -> Iterator[R]:
        """Every record in order, each checked against the chain."""
        if not self.path.exists():
            return
        previous = GENESIS
        with open(self.path, "rb") as handle:
            if self._holder != threading.get_ident():  # a read under this thread's own lock (``reuse``) waits for none
                fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            for number, line in enumerate(handle, start=1):
                record, previous = self._verified(line, previous, f"{self.path}:{number}")
                yield record

    def for_subject(self, subject: str) -> list[R]:
        return [record for record in self.records() if record.subject == subject]

    def at_sequence(self, sender: str, sequence: int) -> list[R]:
        return [record for record in self.records() if (record.sender, record.sequence_number) == (sender, sequence)]

    def expiring_after(self, sender: str, expiration_secs: int) -> list[R]:
        """The sender's records that expire after ``expiration_secs``: the ones that may still need settling."""
        return [record for record in self.records()
                if record.sender == sender and record.expiration_secs > expiration_secs]

    def by_hash(self, transaction_hash: str) -> R | None:
        return next((record for record in self.records() if record.transaction_hash == transaction_hash), None)

    @contextmanager
    def _locked(self) -> Iterator[int]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._holder = threading.get_ident()
            self._catch_up(fd)
            yield fd
        finally:
            self._holder = None
            os.close(fd)  # closing releases the lock

    def _catch_up(self, fd: int) -> None:
        """Read what other processes appended since this instance last looked."""
        size = os.fstat(fd).st_size
        if size < self._offset:
            raise JournalCorrupt(f"{self.path}: the journal shrank")
        for line in os.pread(fd, size - self._offset, self._offset).splitlines(keepends=True):
            record, self._last_hash = self._verified(line, self._last_hash, f"{self.path}@{self._offset}")
            self._remember(record)
            self._offset += len(line)

    def _write(self, fd: int, record: R) -> None:
        if record.transaction_hash in self._hashes:
            raise JournalConflict(TRANSACTION_JOURNALLED, f"{record.transaction_hash} is in {self.path} already")
        body = {**asdict(record), "previous_hash": self._last_hash}
        record_hash = domain_hash(self.domain, body)
        line = canonical_bytes({**body, "record_hash": record_hash}) + b"\n"
        os.write(fd, line)
        os.fsync(fd)
        self._offset += len(line)
        self._last_hash = record_hash
        self._remember(record)

    def _remember(self, record: R) -> None:
        self._last_by_subject[record.subject] = record
        self._hashes.add(record.transaction_hash)
        expiries = self._expiries.setdefault(record.sender, {})
        expiries[record.sequence_number] = max(expiries.get(record.sequence_number, 0), record.expiration_secs)

    def _verified(self, line: bytes, previous: str, where: str) -> tuple[R, str]:
        body = orjson.loads(line)
        stated = body.pop("record_hash")
        if body.pop("previous_hash") != previous or domain_hash(self.domain, {**body, "previous_hash": previous}) != stated:
            raise JournalCorrupt(f"{where}: the hash chain is broken")
        return self.record_type(**body), stated
