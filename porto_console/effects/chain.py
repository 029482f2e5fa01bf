"""What a payment worker needs from a chain, and how an attempt's fate is decided.

``AptosRestClient`` implements it against any Aptos-compatible REST API: a
real node when configured, or the SIMULATED chain. The one rule that keeps a
payment from being paid twice lives here: a transaction the chain does not
know is *absent* only once the chain's own clock has passed its expiry, read
before the lookup, because after that no block can include it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from porto_console.effects.refusals import Refused


class ChainUncertain(Exception):
    """The chain's answer is unknown (no response, timeout, server error): the transaction may have landed."""


class SubmitRefused(Refused):
    """The chain definitively did not accept the submission (an Aptos validation status)."""


class Fate(StrEnum):
    SUCCESS = "success"  # committed and executed
    FAILED = "failed"  # committed, execution failed: the sequence is used, no money moved
    PENDING = "pending"  # known to the node, not yet committed
    UNKNOWN = "unknown"  # not found, but it could still land before its expiry
    EXPIRED = "expired"  # not found after its expiry: it can never land


@dataclass(frozen=True, slots=True)
class ChainTransaction:
    transaction_hash: str
    committed: bool
    success: bool
    vm_status: str
    version: int | None
    timestamp_us: int | None


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

    @property
    def committed(self) -> bool:
        return self.transaction is not None and self.transaction.committed

    @property
    def ledger_version(self) -> int:
        """The transaction's version when committed, else the version the absence was read at."""
        return self.transaction.version if self.committed else self.ledger.version

    @property
    def chain_time_us(self) -> int:
        """The transaction's block time when committed, else the chain time the lookup was read at."""
        return self.transaction.timestamp_us if self.committed else self.ledger.timestamp_us

    def evidence(self, chain_label: str) -> dict:
        """The facts an observation asserts, as stored evidence.

        A committed transaction is described by its own facts only (version,
        block time, status), not by when it was looked at: every later look
        asserts the same thing, so its evidence, digest and command are the
        same, and a repeat is a duplicate. Pending and absent rest on the read
        itself, so they name the chain version and time it was made at.
        """
        found = self.transaction
        read = {} if self.committed else {"ledger_version": self.ledger.version,
                                          "ledger_timestamp_us": self.ledger.timestamp_us}
        return {
            "chain": chain_label,
            "transaction_hash": self.transaction_hash,
            "fate": str(self.fate),
            **read,
            "transaction": None if found is None else {
                "committed": found.committed, "success": found.success, "vm_status": found.vm_status,
                "version": found.version, "timestamp_us": found.timestamp_us},
        }


class ChainClient(Protocol):
    label: str

    def submit(self, signed_bytes: bytes) -> str:
        """Submit signed BCS bytes; returns the hash, or raises SubmitRefused or ChainUncertain."""

    def transaction(self, transaction_hash: str) -> ChainTransaction | None:
        """The transaction by hash, pending or committed; None if the node does not know it."""

    def sequence_number(self, address: str) -> int:
        """The account's next sequence number (0 for an account the chain has not seen)."""

    def ledger_state(self) -> LedgerState:
        """The chain's latest version and block time."""


def observe(chain: ChainClient, transaction_hash: str, expiration_secs: int) -> Observation:
    """Decide what became of one signed transaction."""
    ledger = chain.ledger_state()  # first: a later lookup then covers every block up to it
    found = chain.transaction(transaction_hash)
    if found is None:
        fate = Fate.EXPIRED if ledger.timestamp_us > expiration_secs * 1_000_000 else Fate.UNKNOWN
    elif not found.committed:
        fate = Fate.PENDING
    else:
        fate = Fate.SUCCESS if found.success else Fate.FAILED
    return Observation(fate, transaction_hash, ledger, found)
