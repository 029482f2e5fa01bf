"""The SIMULATED chain: a stand-in for an Aptos node, for `make run`, tests and benchmarks.

It is no chain and holds no real money. It verifies the Ed25519 signature of
every submitted BCS transaction, enforces each account's sequence number
(a transaction waits in the mempool until its sequence is next and is dropped
once its expiry passes), applies USDC-like fungible-asset transfers, records
commitments (``<committer>::commitments::anchor(hash, count, journal_root, journal_size)``, listed by
``anchors``) and answers lookups by hash. Failed transfers still use up their sequence number,
as on Aptos, and resubmitting a committed transaction is refused as
``SEQUENCE_NUMBER_TOO_OLD``: only a lookup by hash tells what happened.

Faults are queued by tests through ``inject`` and consumed by the next
submissions: ``drop_response`` (accepted, the answer is lost), ``timeout``
(not accepted, no answer in time), ``reject`` (refused with a VM status) and
``confirm_late`` (accepted, held pending until ``release``).

Given a ``state_path`` it is durable across its own SIGKILL: accounts,
sequence numbers, balances, the mempool, committed transactions, held
transactions, queued faults and its clock offset are written to that file
(a temporary file, fsynced, renamed over it, the directory fsynced) before
any call that changed them returns, so before any answer is sent. Started
again on the same file, it carries on where it stopped; it is still only
the SIMULATED chain (``chain_state`` below).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from porto_console.effects.refusals import Refused
from porto_console.effects import chain_state
from porto_console.effects.transactions import NotATransfer, SignedTransfer, TransferTerms, decode_transfer

LABEL = "SIMULATED"
FAULT_KINDS = ("drop_response", "timeout", "reject", "confirm_late")
INSUFFICIENT_BALANCE = "Move abort in 0x1::fungible_asset: EINSUFFICIENT_BALANCE(0x10004)"
EXECUTED = "Executed successfully"

log = logging.getLogger("porto.simulated_chain")


class SubmissionRefused(Refused):
    """A submission the chain does not accept; ``code`` follows Aptos's validation status names."""


@dataclass
class Fault:
    kind: str
    hold_seconds: float = 0.0
    vm_status: str = "SIMULATED_REJECTION"


@dataclass
class Submission:
    """What the HTTP layer must do with one submission's answer."""

    transfer: SignedTransfer | None
    fault: Fault | None


@dataclass
class Committed:
    transfer: SignedTransfer  # a transfer or a commitment
    version: int
    timestamp_us: int
    success: bool
    vm_status: str


@dataclass
class Account:
    sequence_number: int = 0
    mempool: dict[int, SignedTransfer] = field(default_factory=dict)


class SimulatedChain:
    def __init__(self, *, chain_id: int = 4, state_path: str | os.PathLike | None = None) -> None:
        self.chain_id = chain_id
        self._lock = threading.RLock()
        self._offset_secs = 0.0
        self._accounts: dict[str, Account] = {}
        self._balances: dict[tuple[str, str], int] = {}
        self._committed: dict[str, Committed] = {}
        self._held: set[str] = set()
        self._transfers_before_hold: int | None = None  # None: no hold; n: n more transfers run, later ones wait
        self._faults: deque[Fault] = deque()
        self._version = 0
        self._state_path = Path(state_path) if state_path else None
        self._changed = False
        if self._state_path and self._state_path.exists():
            chain_state.load(self, orjson.loads(self._state_path.read_bytes()))
            log.info("%s chain: resumed from %s at version %s", LABEL, self._state_path, self._version)

    def _persist(self) -> None:
        """Write the whole state durably if anything changed; called under the lock before a call returns."""
        if self._state_path is not None and self._changed:
            chain_state.write(self._state_path, chain_state.dump(self))
        self._changed = False

    # Time: wall clock plus an offset tests may advance.
    def now_us(self) -> int:
        return int((time.time() + self._offset_secs) * 1_000_000)

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._offset_secs += seconds
            self._changed = True
            log.info("%s chain: clock advanced %ss", LABEL, seconds)
            self._execute_ready()
            self._persist()

    # Control, for tests and the demo.
    def fund(self, asset_metadata: str, address: str, amount: int) -> None:
        with self._lock:
            self._balances[(asset_metadata, address)] = self.balance(asset_metadata, address) + amount
            self._accounts.setdefault(address, Account())
            self._changed = True
            log.info("%s chain: minted %s of %s to %s", LABEL, amount, asset_metadata, address)
            self._persist()

    def inject(self, fault: Fault, times: int = 1) -> None:
        if fault.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {fault.kind!r}; one of {FAULT_KINDS}")
        with self._lock:
            self._faults.extend([fault] * times)
            self._changed = True
            self._persist()

    def hold_transfers_after(self, count: int) -> None:
        """Let the next ``count`` transfers run; accept every later one but hold it until released."""
        with self._lock:
            self._transfers_before_hold = count
            self._changed = True
            self._persist()

    def release(self, transaction_hash: str | None = None, *, count: int | None = None) -> None:
        """Let held transactions execute when their turn comes: one, the ``count`` lowest, or all (ending a hold).

        Releasing ``count`` when fewer are held lets the next transfers to arrive run, up to ``count`` in all.
        """
        with self._lock:
            if transaction_hash is not None:
                self._held -= {transaction_hash}
            elif count is not None:
                released = self._lowest_held(count)
                self._held -= set(released)
                if self._transfers_before_hold is not None:  # a release of more than is held lets later ones run
                    self._transfers_before_hold += count - len(released)
            else:
                self._held = set()
                self._transfers_before_hold = None
            self._changed = True
            self._execute_ready()
            self._persist()

    def _lowest_held(self, count: int) -> list[str]:
        waiting = sorted((transfer.terms.sequence_number, transfer.transaction_hash)
                         for account in self._accounts.values() for transfer in account.mempool.values()
                         if transfer.transaction_hash in self._held)
        return [transaction_hash for _, transaction_hash in waiting[:count]]

    # Reads.
    def balance(self, asset_metadata: str, address: str) -> int:
        with self._lock:
            return self._balances.get((asset_metadata, address), 0)

    def ledger_info(self) -> dict[str, Any]:
        with self._lock:
            self._settle()
            return {"chain_id": self.chain_id, "ledger_version": str(self._version),
                    "ledger_timestamp": str(self.now_us()), "chain": LABEL}

    def sequence_number(self, address: str) -> int | None:
        with self._lock:
            self._settle()
            account = self._accounts.get(address)
            return account.sequence_number if account else None

    def lookup(self, transaction_hash: str) -> dict[str, Any] | None:
        with self._lock:
            self._settle()
            committed = self._committed.get(transaction_hash)
            if committed is not None:
                return _committed_json(committed)
            pending = self._pending(transaction_hash)
            return _pending_json(pending) if pending else None

    def transfers(self) -> list[dict[str, Any]]:
        """Every committed transfer in version order, successful or not."""
        return self._committed_in_order(commitments=False)

    def anchors(self) -> list[dict[str, Any]]:
        """Every committed commitment in version order: what was anchored, and by which transaction."""
        return self._committed_in_order(commitments=True)

    def _committed_in_order(self, *, commitments: bool) -> list[dict[str, Any]]:
        with self._lock:
            self._settle()
            return [_committed_json(c) for c in sorted(self._committed.values(), key=lambda c: c.version)
                    if c.transfer.is_commitment == commitments]

    # Submission.
    def submit(self, signed_bytes: bytes) -> Submission:
        """Validate and accept a transaction, or raise ``SubmissionRefused``; faults shape the answer."""
        with self._lock:
            try:
                return self._submit(signed_bytes)
            finally:
                self._persist()

    def _submit(self, signed_bytes: bytes) -> Submission:
        fault = self._faults.popleft() if self._faults else None
        self._changed = self._changed or fault is not None
        if fault and fault.kind == "timeout":
            log.info("%s chain: submission lost before acceptance (timeout fault)", LABEL)
            return Submission(None, fault)
        if fault and fault.kind == "reject":
            raise SubmissionRefused(fault.vm_status, "rejected by an injected fault")
        transfer = self._validate(signed_bytes)
        account = self._accounts.setdefault(transfer.terms.sender, Account())
        resubmitted = transfer.terms.sequence_number in account.mempool
        account.mempool[transfer.terms.sequence_number] = transfer
        self._changed = True
        if (fault and fault.kind == "confirm_late") or (not resubmitted and self._held_by_the_hold(transfer)):
            self._held.add(transfer.transaction_hash)
        log.info("%s chain: accepted %s (sender %s sequence %s)", LABEL, transfer.transaction_hash,
                 transfer.terms.sender, transfer.terms.sequence_number)
        self._execute_ready()
        return Submission(transfer, fault)

    def _held_by_the_hold(self, transfer: SignedTransfer) -> bool:
        if self._transfers_before_hold is None or transfer.is_commitment:
            return False
        if self._transfers_before_hold > 0:
            self._transfers_before_hold -= 1
            return False
        return True

    def _validate(self, signed_bytes: bytes) -> SignedTransfer:
        try:
            transfer = decode_transfer(signed_bytes)
        except NotATransfer as error:
            raise SubmissionRefused("INVALID_SIGNATURE", str(error)) from None
        terms = transfer.terms
        if terms.chain_id != self.chain_id:
            raise SubmissionRefused("BAD_CHAIN_ID", f"chain id {terms.chain_id} is not {self.chain_id}")
        if terms.expiration_secs * 1_000_000 <= self.now_us():
            raise SubmissionRefused("TRANSACTION_EXPIRED", "the expiration time has passed")
        account = self._accounts.get(terms.sender, Account())
        if terms.sequence_number < account.sequence_number:
            raise SubmissionRefused("SEQUENCE_NUMBER_TOO_OLD",
                                    f"sequence {terms.sequence_number} < account sequence {account.sequence_number}")
        waiting = account.mempool.get(terms.sequence_number)
        if waiting is not None and waiting.transaction_hash != transfer.transaction_hash:
            raise SubmissionRefused("SEQUENCE_NUMBER_IN_MEMPOOL",
                                    f"another transaction waits at sequence {terms.sequence_number}")
        return transfer

    # Execution: each account runs its mempool in sequence order; expired entries are dropped.
    def _settle(self) -> None:
        self._execute_ready()
        self._persist()

    def _execute_ready(self) -> None:
        now = self.now_us()
        for account in self._accounts.values():
            for sequence in sorted(account.mempool):
                if account.mempool[sequence].terms.expiration_secs * 1_000_000 <= now:
                    dropped = account.mempool.pop(sequence)
                    self._changed = True
                    log.info("%s chain: %s expired in the mempool", LABEL, dropped.transaction_hash)
            while (ready := account.mempool.get(account.sequence_number)) and ready.transaction_hash not in self._held:
                del account.mempool[account.sequence_number]
                self._apply(ready, account, now)

    def _apply(self, transfer: SignedTransfer, account: Account, now: int) -> None:
        success = transfer.is_commitment or self._move_funds(transfer.terms)
        self._changed = True
        account.sequence_number += 1
        self._version += 1
        self._committed[transfer.transaction_hash] = Committed(
            transfer, self._version, now, success, EXECUTED if success else INSUFFICIENT_BALANCE)
        log.info("%s chain: committed %s at version %s, success=%s", LABEL, transfer.transaction_hash,
                 self._version, success)

    def _move_funds(self, terms: TransferTerms) -> bool:
        """A transfer moves its amount if the sender holds it; False (a Move abort) otherwise."""
        source = (terms.asset_metadata, terms.sender)
        if self._balances.get(source, 0) < terms.amount:
            return False
        self._balances[source] -= terms.amount
        target = (terms.asset_metadata, terms.recipient)
        self._balances[target] = self._balances.get(target, 0) + terms.amount
        return True

    def _pending(self, transaction_hash: str) -> SignedTransfer | None:
        for account in self._accounts.values():
            for transfer in account.mempool.values():
                if transfer.transaction_hash == transaction_hash:
                    return transfer
        return None


def _transfer_json(transfer: SignedTransfer) -> dict[str, Any]:
    terms = transfer.terms
    return {
        "hash": transfer.transaction_hash,
        "sender": terms.sender,
        "sequence_number": str(terms.sequence_number),
        "expiration_timestamp_secs": str(terms.expiration_secs),
        "payload": terms.payload_json(),
        "chain": LABEL,
    }


def _pending_json(transfer: SignedTransfer) -> dict[str, Any]:
    return {"type": "pending_transaction", **_transfer_json(transfer)}


def _committed_json(committed: Committed) -> dict[str, Any]:
    return {
        "type": "user_transaction",
        **_transfer_json(committed.transfer),
        "version": str(committed.version),
        "timestamp": str(committed.timestamp_us),
        "success": committed.success,
        "vm_status": committed.vm_status,
    }
