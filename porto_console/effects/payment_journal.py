"""The independent signed-payment journal: every signed transfer, on disk before it can be broadcast.

It lives outside the ledger (its own file, normally on other storage) so that
after a ledger restore the reconcile step can still learn of every
transaction that was ever signed, including ones signed after the backup was
taken. Records are appended under an exclusive file lock, one canonical JSON
line each, fsynced before ``append`` returns, and hash-chained so that a
truncated or edited journal is detected when it is read.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

import orjson

from ledger_engine.canonical import canonical_bytes, domain_hash
from porto_console.effects.transactions import SignedTransfer

JOURNAL_DOMAIN = "porto:london:signed-payment:v1\n"
GENESIS = "0" * 64


class JournalCorrupt(Exception):
    """The journal's chain is broken at the named line."""


@dataclass(frozen=True, slots=True)
class SignedPaymentRecord:
    payment_id: str
    effect_id: str
    worker_id: str
    transaction_hash: str
    sender: str
    sequence_number: int
    recipient: str
    asset_metadata: str
    amount: str
    expiration_secs: int
    chain_id: int
    signed_bytes_hex: str
    recorded_at_ms: int

    @classmethod
    def of(cls, payment_id: str, effect_id: str, worker_id: str, transfer: SignedTransfer,
           recorded_at_ms: int) -> "SignedPaymentRecord":
        terms = transfer.terms
        return cls(payment_id, effect_id, worker_id, transfer.transaction_hash, terms.sender, terms.sequence_number,
                   terms.recipient, terms.asset_metadata, str(terms.amount), terms.expiration_secs,
                   terms.chain_id, transfer.signed_bytes.hex(), recorded_at_ms)

    @property
    def signed_bytes(self) -> bytes:
        return bytes.fromhex(self.signed_bytes_hex)

    @property
    def signed_bytes_sha256(self) -> str:
        return hashlib.sha256(self.signed_bytes).hexdigest()


class SignedPaymentJournal:
    """One journal file; an instance remembers how far it has read, to choose sequences quickly."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._offset = 0
        self._last_hash = GENESIS
        self._expiries: dict[str, dict[int, int]] = {}  # sender -> sequence -> latest expiry (seconds)
        self._last_by_payment: dict[str, SignedPaymentRecord] = {}

    def sign_next(self, *, payment_id: str, effect_id: str, worker_id: str, sender: str, chain_sequence: int,
                  chain_time_secs: int, reuse: Callable[[SignedPaymentRecord], bool],
                  sign: Callable[[int], SignedTransfer], now_ms: int) -> tuple[SignedPaymentRecord, bool]:
        """The payment's last signed record if ``reuse`` accepts it, else a new one; True when new.

        All under the journal's lock, so concurrent deliveries of one payment
        agree on one transaction. A new transfer takes the lowest sequence from
        the chain's next one up at which no journalled transaction can still
        land (none, or all expired by chain time), so workers in any number of
        processes never sign two live transactions at one sequence.
        """
        with self._locked() as fd:
            last = self._last_by_payment.get(payment_id)
            if last is not None and reuse(last):
                return last, False
            taken = self._expiries.get(sender, {})
            sequence = chain_sequence
            while taken.get(sequence, 0) > chain_time_secs:
                sequence += 1
            record = SignedPaymentRecord.of(payment_id, effect_id, worker_id, sign(sequence), now_ms)
            self._write(fd, record)
            return record, True

    def append(self, record: SignedPaymentRecord) -> None:
        """Append one record durably; returns only after the line is fsynced."""
        with self._locked() as fd:
            self._write(fd, record)

    def records(self) -> Iterator[SignedPaymentRecord]:
        """Every record in order, each checked against the chain."""
        if not self.path.exists():
            return
        previous = GENESIS
        with open(self.path, "rb") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            for number, line in enumerate(handle, start=1):
                record, previous = _verified(line, previous, f"{self.path}:{number}")
                yield record

    def for_payment(self, payment_id: str) -> list[SignedPaymentRecord]:
        return [record for record in self.records() if record.payment_id == payment_id]

    def by_hash(self, transaction_hash: str) -> SignedPaymentRecord | None:
        return next((record for record in self.records() if record.transaction_hash == transaction_hash), None)

    @contextmanager
    def _locked(self) -> Iterator[int]:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._catch_up(fd)
            yield fd
        finally:
            os.close(fd)  # closing releases the lock

    def _catch_up(self, fd: int) -> None:
        """Read what other processes appended since this instance last looked."""
        size = os.fstat(fd).st_size
        if size < self._offset:
            raise JournalCorrupt(f"{self.path}: the journal shrank")
        for line in os.pread(fd, size - self._offset, self._offset).splitlines(keepends=True):
            record, self._last_hash = _verified(line, self._last_hash, f"{self.path}@{self._offset}")
            self._remember(record)
            self._offset += len(line)

    def _write(self, fd: int, record: SignedPaymentRecord) -> None:
        body = {**asdict(record), "previous_hash": self._last_hash}
        record_hash = _record_hash(body)
        line = canonical_bytes({**body, "record_hash": record_hash}) + b"\n"
        os.write(fd, line)
        os.fsync(fd)
        self._offset += len(line)
        self._last_hash = record_hash
        self._remember(record)

    def _remember(self, record: SignedPaymentRecord) -> None:
        self._last_by_payment[record.payment_id] = record
        expiries = self._expiries.setdefault(record.sender, {})
        expiries[record.sequence_number] = max(expiries.get(record.sequence_number, 0), record.expiration_secs)


def _verified(line: bytes, previous: str, where: str) -> tuple[SignedPaymentRecord, str]:
    body = orjson.loads(line)
    stated = body.pop("record_hash")
    if body.pop("previous_hash") != previous or _record_hash({**body, "previous_hash": previous}) != stated:
        raise JournalCorrupt(f"{where}: the hash chain is broken")
    return SignedPaymentRecord(**body), stated


def _record_hash(body: dict) -> str:
    return domain_hash(JOURNAL_DOMAIN, body)
