"""A signed-transaction journal: every transaction a worker signs, on disk before it can be broadcast.

It lives outside the ledger (its own file, normally on other storage) so
that after a ledger restore the chain can still be compared with everything
that was ever signed, including what was signed after the backup was taken.
Records are appended under an exclusive file lock, one canonical JSON line
each, fsynced before ``sign_next`` or ``append`` returns, and hash-chained so
that a truncated or edited journal is detected when it is read.

Each record names its ``subject`` (the payment or the batch it carries out)
and its sender's sequence number; ``sign_batch_for`` is the session's memory
of each subject's last transaction and the sequence allocator shared by
worker processes: one lock and one fsync sign a whole batch, and no
sequence is taken at or beyond the sender's window (``window``: how many
transactions of one sender a node's mempool takes).

Lookups by hash and by sequence, and the sender's live records, are answered
from what this instance has read, after reading whatever other processes
appended since; ``records`` reads and checks the whole file again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from contextlib import contextmanager
from dataclasses import Field, asdict, dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Generic, Iterator, Protocol, Sequence, TypeVar

import orjson

from ledger_engine.canonical import canonical_bytes, domain_hash
from porto_console.effects.chain import Signed

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


class SignedRecord(Signed, Protocol):
    """A journalled record: a frozen dataclass (its fields are what is hashed and written) of one signed transaction."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def signed_bytes(self) -> bytes: ...

    @property
    def subject(self) -> str: ...


R = TypeVar("R", bound=SignedRecord)


UNBOUNDED = 2**63  # a window no sender fills: commitments are signed one at a time


def lowest_free_sequence(chain_sequence: int, held: Callable[[int], bool]) -> int:
    """The lowest sequence from the chain's next one up that no transaction able to land still ``held``."""
    sequence = chain_sequence
    while held(sequence):
        sequence += 1
    return sequence


@dataclass(frozen=True, slots=True)
class SignRequest(Generic[R]):
    """One subject to sign for: ``sign(sequence)`` makes its record when a new transaction is needed."""

    subject: str
    sign: Callable[[int], R]


class Allocation:
    """The free sequences of one sender in one batch: held ones skipped, each one given once, none past the window."""

    def __init__(self, chain_sequence: int, held: Callable[[int], bool], window: int) -> None:
        self._next = chain_sequence
        self._held = held
        self._limit = chain_sequence + window

    def take(self) -> int | None:
        sequence = lowest_free_sequence(self._next, self._held)
        if sequence >= self._limit:
            return None
        self._next = sequence + 1
        return sequence


def sign_or_reuse(requests: Sequence[SignRequest[R]], last_for: Callable[[str], R | None],
                  reuse: Callable[[R], bool], allocation: Allocation,
                  write: Callable[[R], None]) -> list[tuple[R, bool] | None]:
    """Each request's last record if ``reuse`` accepts it, else a new one at the allocation's next free
    sequence, written with ``write``; None where the window has no free sequence. Both adapters decide so."""
    signed: list[tuple[R, bool] | None] = []
    for request in requests:
        last = last_for(request.subject)
        if last is not None and reuse(last):
            signed.append((last, False))
            continue
        sequence = allocation.take()
        if sequence is None:
            signed.append(None)
            continue
        record = request.sign(sequence)
        write(record)
        signed.append((record, True))
    return signed


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


class SignsOneAtATime(Generic[R]):
    """``sign_next_for`` as a batch of one with no window: what the commitment session signs with."""

    def sign_next_for(self, subject: str, *, sender: str, chain_sequence: int, chain_time_secs: int,
                      reuse: Callable[[R], bool], sign: Callable[[int], R]) -> tuple[R, bool]:
        """The subject's last signed record if ``reuse`` accepts it, else a new one; True when new."""
        signed = self.sign_batch_for([SignRequest(subject, sign)], sender=sender, chain_sequence=chain_sequence,
                                     chain_time_secs=chain_time_secs, reuse=reuse, window=UNBOUNDED)
        assert signed[0] is not None  # an unbounded window always has a free sequence
        return signed[0]

    def sign_batch_for(self, requests: Sequence[SignRequest[R]], *, sender: str, chain_sequence: int,
                       chain_time_secs: int, reuse: Callable[[R], bool],
                       window: int) -> list[tuple[R, bool] | None]:
        raise NotImplementedError


class SignedJournal(SignsOneAtATime[R]):
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
        self._by_hash: dict[str, R] = {}
        self._by_sequence: dict[tuple[str, int], list[R]] = {}
        self._holder: int | None = None  # the thread that holds the exclusive lock through this instance
        self._memory = threading.RLock()  # this instance's reading position and what it read

    @property
    def location(self) -> str:
        return str(self.path)

    def sign_batch_for(self, requests: Sequence[SignRequest[R]], *, sender: str, chain_sequence: int,
                       chain_time_secs: int, reuse: Callable[[R], bool],
                       window: int) -> list[tuple[R, bool] | None]:
        """For each request in order: its subject's last record if ``reuse`` accepts it, else a new one (True);
        None when every sequence of the sender's window is held.

        All under the journal's lock, so concurrent deliveries of one subject
        agree on one transaction, and durable with one fsync before this
        returns. A new one takes the lowest sequence from the chain's next one
        up at which no journalled transaction can still land (none, or all
        expired by chain time), below ``chain_sequence + window``, so workers
        in any number of processes never sign two live transactions at one
        sequence, nor more than a node's mempool takes from one sender.
        """
        with self._locked() as fd:
            taken = self._expiries.get(sender, {})
            allocation = Allocation(chain_sequence, lambda sequence: taken.get(sequence, 0) > chain_time_secs, window)
            signed = sign_or_reuse(requests, self._last_by_subject.get, reuse, allocation,
                                   lambda record: self._write(fd, record))
            if any(item is not None and item[1] for item in signed):
                os.fsync(fd)
            return signed

    def last_for(self, subject: str) -> R | None:
        """The subject's last signed record, as every process sees it now."""
        with self._reading():
            return self._last_by_subject.get(subject)

    def append(self, record: R) -> None:
        """Append one record durably; returns only after the line is fsynced."""
        with self._locked() as fd:
            self._write(fd, record)
            os.fsync(fd)

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
        with self._reading():
            return list(self._by_sequence.get((sender, sequence), ()))

    def expiring_after(self, sender: str, expiration_secs: int) -> list[R]:
        """The sender's records that expire after ``expiration_secs``: the ones that may still need settling."""
        return [record for record in self.records()
                if record.sender == sender and record.expiration_secs > expiration_secs]

    def live_from(self, sender: str, sequence: int, chain_time_secs: int) -> list[R]:
        """The sender's records at ``sequence`` and above that can still land by chain time, in journal order."""
        with self._reading():
            return [record for (owner, at), held in sorted(self._by_sequence.items())
                    if owner == sender and at >= sequence for record in held
                    if record.expiration_secs > chain_time_secs]

    def by_hash(self, transaction_hash: str) -> R | None:
        with self._reading():
            return self._by_hash.get(transaction_hash)

    @contextmanager
    def _locked(self) -> Iterator[int]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            with self._memory:
                self._holder = threading.get_ident()
                self._catch_up(fd)
                yield fd
        finally:
            self._holder = None
            os.close(fd)  # closing releases the lock

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """What this instance read, brought up to date under a shared lock (or the exclusive one it holds)."""
        if self._holder == threading.get_ident():
            yield
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            with self._memory:
                self._catch_up(fd)
                yield
        finally:
            os.close(fd)

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
        """Append one line; the caller fsyncs before anything else happens to the bytes."""
        if record.transaction_hash in self._by_hash:
            raise JournalConflict(TRANSACTION_JOURNALLED, f"{record.transaction_hash} is in {self.path} already")
        body = {**asdict(record), "previous_hash": self._last_hash}
        record_hash = domain_hash(self.domain, body)
        line = canonical_bytes({**body, "record_hash": record_hash}) + b"\n"
        os.write(fd, line)
        self._offset += len(line)
        self._last_hash = record_hash
        self._remember(record)

    def _remember(self, record: R) -> None:
        self._last_by_subject[record.subject] = record
        self._by_hash[record.transaction_hash] = record
        self._by_sequence.setdefault((record.sender, record.sequence_number), []).append(record)
        expiries = self._expiries.setdefault(record.sender, {})
        expiries[record.sequence_number] = max(expiries.get(record.sequence_number, 0), record.expiration_secs)

    def _verified(self, line: bytes, previous: str, where: str) -> tuple[R, str]:
        body = orjson.loads(line)
        stated = body.pop("record_hash")
        if body.pop("previous_hash") != previous or domain_hash(self.domain, {**body, "previous_hash": previous}) != stated:
            raise JournalCorrupt(f"{where}: the hash chain is broken")
        return self.record_type(**body), stated
