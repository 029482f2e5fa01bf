"""The signer's stores as ports: the signed-transaction journal and the quarantine, each with two adapters.

- the file adapters (``signed_journal.SignedJournal``, ``quarantine.Quarantine``)
  are the embedded default: one host, a local file locked with ``flock`` and
  a directory;
- the PostgreSQL adapters (``pg_journal``, ``pg_quarantine``) let signers on
  any number of hosts share one payer; ``PORTO_SIGNER_JOURNAL_URL`` selects
  them (``stores``).

Both journals keep one rule for sender sequences: a new transaction takes
the lowest sequence, from the chain's next one up, at which no journalled
transaction can still land (none is there, or every one there has expired by
chain time), and none at or past the sender's window above the chain's next
sequence. So an expired transaction's sequence is used again, two
transactions that could both land never share one, and no more wait for
one sender than a node's mempool takes. A transaction hash is journalled
once.
"""

from __future__ import annotations

from typing import Callable, Iterator, Protocol, Sequence, TypeVar

from ledger_engine.open_json import Report
from porto_console.effects.signed_journal import (
    SEQUENCE_LIVE, TRANSACTION_JOURNALLED, JournalConflict, JournalCorrupt, SignedRecord, SignRequest,
)

__all__ = ["SEQUENCE_LIVE", "TRANSACTION_JOURNALLED", "JournalConflict", "JournalCorrupt", "JournalPort",
           "QuarantinePort"]

R = TypeVar("R", bound=SignedRecord)


class JournalPort(Protocol[R]):
    """What a session, reconcile and the journal check need from a signed-transaction journal."""

    @property
    def location(self) -> str: ...

    def sign_next_for(self, subject: str, *, sender: str, chain_sequence: int, chain_time_secs: int,
                      reuse: Callable[[R], bool], sign: Callable[[int], R]) -> tuple[R, bool]: ...

    def sign_batch_for(self, requests: Sequence[SignRequest[R]], *, sender: str, chain_sequence: int,
                       chain_time_secs: int, reuse: Callable[[R], bool],
                       window: int) -> list[tuple[R, bool] | None]: ...

    def last_for(self, subject: str) -> R | None: ...

    def append(self, record: R) -> None: ...

    def records(self) -> Iterator[R]: ...

    def for_subject(self, subject: str) -> list[R]: ...

    def at_sequence(self, sender: str, sequence: int) -> list[R]: ...

    def live_from(self, sender: str, sequence: int, chain_time_secs: int) -> list[R]: ...

    def expiring_after(self, sender: str, expiration_secs: int) -> list[R]: ...

    def by_hash(self, transaction_hash: str) -> R | None: ...


class QuarantinePort(Protocol):
    """Effects parked for an operator, shared by the workers and the console."""

    def add(self, effect_id: str, kind: str, reason: str, retries: int, *,
            cause: str = "refused rule") -> Report: ...

    def contains(self, effect_id: str) -> bool: ...

    def entries(self) -> list[Report]: ...

    def release(self, effect_id: str) -> Report | None: ...
