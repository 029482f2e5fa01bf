"""What a payment worker needs from a chain, and how an attempt's fate is decided.

``AptosRestClient`` implements it against any Aptos-compatible REST API: a
real node when configured, or the SIMULATED chain. The rules that keep a
payment from being paid twice live here:

- a transaction the chain does not know is *expired* only once the chain's
  own clock, read before the lookup, has passed its expiry, because after
  that no block can include it, and only while its sender's sequence is
  unused, or used by another journalled transaction the chain shows
  committed. A sequence used by a transaction the node does not show means
  the node hides the one asked for (a replica behind, a pruned or lying
  node): that is ``ChainContradiction``, never an expiry;
- an answer is taken as the transaction asked for only when it names its
  hash, sender, sequence number and entry-function call.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Iterable, Protocol

from ledger_engine.open_json import Document
from porto_console.effects.refusals import Refused
from porto_console.effects.transactions import long_address, same_call


class ChainUncertain(Exception):
    """The chain's answer is unknown (no response, timeout, server error): the transaction may have landed."""


class ChainContradiction(ChainUncertain):
    """The chain's answers contradict each other or the journal: what became of the transaction is unknown.

    It is retried like any uncertainty, and never read as an expiry or a confirmation.
    """


class SubmitRefused(Refused):
    """The chain definitively did not accept the submission (an Aptos validation status)."""


class Fate(StrEnum):
    SUCCESS = "success"  # committed and executed
    FAILED = "failed"  # committed, execution failed: the sequence is used, no money moved
    PENDING = "pending"  # known to the node, not yet committed
    UNKNOWN = "unknown"  # not found before its expiry: it could still land, unless another used its sequence
    EXPIRED = "expired"  # not found after its expiry, its sequence unused or used by another: it can never land


@dataclass(frozen=True, slots=True)
class ChainTransaction:
    transaction_hash: str
    committed: bool
    success: bool
    vm_status: str
    version: int | None
    timestamp_us: int | None
    # What the node says the transaction is; compared with what was signed before the answer counts.
    sender: str | None = None
    sequence_number: int | None = None
    payload: Document | None = None


@dataclass(frozen=True, slots=True)
class LedgerState:
    version: int
    timestamp_us: int


@dataclass(frozen=True, slots=True)
class Observation:
    """A decided fate with the chain facts it rests on."""

    fate: Fate
    transaction_hash: str
    ledger: LedgerState
    transaction: ChainTransaction | None
    sender_sequence: int | None = None  # not found: the sender's next sequence, read after the ledger state
    superseded_by: str | None = None  # not found: the journalled transaction the chain shows at its sequence

    @property
    def may_still_land(self) -> bool:
        """Landed, pending, or not found while its expiry and its sequence are still ahead."""
        return self.fate in (Fate.SUCCESS, Fate.PENDING) or (self.fate == Fate.UNKNOWN and self.superseded_by is None)

    @property
    def committed(self) -> bool:
        return self.transaction is not None and self.transaction.committed

    @property
    def ledger_version(self) -> int:
        """The transaction's version when committed, else the version the absence was read at."""
        if not self.committed:
            return self.ledger.version
        assert self.transaction is not None and self.transaction.version is not None  # committed: it has one
        return self.transaction.version

    @property
    def chain_time_us(self) -> int:
        """The transaction's block time when committed, else the chain time the lookup was read at."""
        if not self.committed:
            return self.ledger.timestamp_us
        assert self.transaction is not None and self.transaction.timestamp_us is not None  # committed: it has one
        return self.transaction.timestamp_us

    def evidence(self, chain_label: str) -> dict:
        """The facts an observation asserts, as stored evidence.

        A committed transaction is described by its own facts only (version,
        block time, status), not by when it was looked at: every later look
        asserts the same thing, so its evidence, digest and command are the
        same, and a repeat is a duplicate. Pending and absent rest on the read
        itself, so they name the chain version and time it was made at.
        """
        found = self.transaction
        read: dict[str, int | str] = {} if self.committed else {"ledger_version": self.ledger.version,
                                                                "ledger_timestamp_us": self.ledger.timestamp_us}
        if self.sender_sequence is not None:
            read["sender_sequence"] = self.sender_sequence
        if self.superseded_by is not None:
            read["superseded_by"] = self.superseded_by
        return {
            "chain": chain_label,
            "transaction_hash": self.transaction_hash,
            "fate": str(self.fate),
            **read,
            "transaction": None if found is None else {
                "committed": found.committed, "success": found.success, "vm_status": found.vm_status,
                "version": found.version, "timestamp_us": found.timestamp_us},
        }


class Signed(Protocol):
    """A signed transaction as the journal holds it: what an observation compares the chain's answers with."""

    @property
    def transaction_hash(self) -> str: ...

    @property
    def sender(self) -> str: ...

    @property
    def sequence_number(self) -> int: ...

    @property
    def expiration_secs(self) -> int: ...

    def payload_json(self) -> Document:
        """Its entry-function call as a node shows it in JSON."""


class ChainReader(Protocol):
    """What deciding a fate reads from a chain (``observe``)."""

    label: str

    def transaction(self, transaction_hash: str) -> ChainTransaction | None:
        """The transaction by hash, pending or committed; None if the node does not know it."""

    def sequence_number(self, address: str) -> int:
        """The account's next sequence number (0 for an account the chain has not seen)."""

    def ledger_state(self) -> LedgerState:
        """The chain's latest version and block time."""


class ChainClient(ChainReader, Protocol):
    def submit(self, signed_bytes: bytes) -> str:
        """Submit signed BCS bytes; returns the hash, or raises SubmitRefused or ChainUncertain."""

    def account_transactions(self, address: str, start: int, limit: int) -> list[ChainTransaction]:
        """The account's committed transactions from sequence ``start``, in order, at most ``limit``."""


def observe(chain: ChainReader, signed: Signed,
            same_sequence: Callable[[], Iterable[Signed]] = tuple) -> Observation:
    """Decide what became of one signed transaction.

    ``same_sequence`` lists the other journalled transactions of its sender
    at its sequence: the only ones that may have used that sequence instead.
    Raises ``ChainUncertain`` when the answers do not settle it.
    """
    ledger = chain.ledger_state()  # first: a later lookup then covers every block up to it
    found = chain.transaction(signed.transaction_hash)
    if found is not None:
        return _found(signed, ledger, found)
    sender_sequence = chain.sequence_number(signed.sender)
    if sender_sequence <= signed.sequence_number:
        return Observation(_absent(signed, ledger), signed.transaction_hash, ledger, None, sender_sequence)
    found = chain.transaction(signed.transaction_hash)  # again: now read after the sequence it used was
    if found is not None:
        return _found(signed, ledger, found)
    superseded_by = _used_by(chain, signed, same_sequence())
    if superseded_by is None:
        raise ChainContradiction(
            f"{chain.label}: the sender's sequence {signed.sequence_number} is used (next {sender_sequence}) but "
            f"{signed.transaction_hash} is not returned, and no other journalled transaction at that sequence "
            "is: the node hides what used it")
    return Observation(_absent(signed, ledger), signed.transaction_hash, ledger, None, sender_sequence, superseded_by)


def _found(signed: Signed, ledger: LedgerState, found: ChainTransaction) -> Observation:
    _require_asked(signed, found)
    if not found.committed:
        fate = Fate.PENDING
    else:
        fate = Fate.SUCCESS if found.success else Fate.FAILED
    return Observation(fate, signed.transaction_hash, ledger, found)


def _absent(signed: Signed, ledger: LedgerState) -> Fate:
    return Fate.EXPIRED if ledger.timestamp_us > signed.expiration_secs * 1_000_000 else Fate.UNKNOWN


def _used_by(chain: ChainReader, signed: Signed, others: Iterable[Signed]) -> str | None:
    """The journalled transaction the chain shows committed at ``signed``'s sequence, if there is one."""
    for other in others:
        if other.transaction_hash == signed.transaction_hash:
            continue
        found = chain.transaction(other.transaction_hash)
        if found is not None and found.committed:
            _require_asked(other, found)
            return other.transaction_hash
    return None


def _require_asked(signed: Signed, found: ChainTransaction) -> None:
    """The answer is the transaction that was signed: its hash, sender, sequence and call, or ChainUncertain."""
    answered = (found.transaction_hash.lower(), found.sender and long_address(found.sender), found.sequence_number)
    asked = (signed.transaction_hash.lower(), long_address(signed.sender), signed.sequence_number)
    if answered != asked or not same_call(found.payload, signed.payload_json()):
        raise ChainContradiction(
            f"asked for {signed.transaction_hash} (sender {signed.sender}, sequence {signed.sequence_number}), the "
            f"node answered {found.transaction_hash} (sender {found.sender}, sequence {found.sequence_number}, "
            f"payload {found.payload}): not the transaction that was signed")
