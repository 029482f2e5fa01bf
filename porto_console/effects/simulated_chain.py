"""The SIMULATED chain: a stand-in for an Aptos node, for `make run`, tests and benchmarks.

It is no chain and holds no real money. It verifies the Ed25519 signature of
every submitted BCS transaction, enforces each account's sequence number as
an Aptos node does (a transaction ahead of the account's sequence waits in
the mempool until the gap fills or its expiry passes; at most
``MEMPOOL_CAPACITY_PER_SENDER`` wait per sender, beyond which a submission
is refused ``mempool_is_full`` with HTTP 507), applies USDC-like
fungible-asset transfers, records commitments
(``<committer>::commitments::anchor(hash, count, journal_root, journal_size)``, listed by
``anchors``) and answers lookups by hash and by sender sequence. Failed
transfers still use up their sequence number, as on Aptos, and resubmitting
a committed transaction is refused as ``SEQUENCE_NUMBER_TOO_OLD``: only a
lookup tells what happened.

Faults are queued by tests through ``inject`` and consumed by the next
submissions: ``drop_response`` (accepted, the answer is lost), ``timeout``
(not accepted, no answer in time), ``reject`` (refused with a VM status) and
``confirm_late`` (accepted, held pending until ``release``).

Given a ``state_path`` it keeps what it committed across its own SIGKILL and
forgets its mempool, as a real node does (``chain_state``): every mint and
every executed transaction is appended to a log and fsynced before the call
that made it answers. ``keep_mempool`` keeps the mempool too, for tests that
must not lose it. Its clock is the wall clock plus an offset that a test sets
at start (``clock_offset_secs``, which may be negative: a chain behind the
console) and may only move forward (``advance``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from ledger_engine.open_json import Document
from porto_console.effects import chain_state
from porto_console.effects.chain_state import CommitRecord as Committed
from porto_console.effects.refusals import Refused
from porto_console.effects.transactions import (
    CommitmentTerms, NotATransfer, SignedTransfer, Terms, TransferTerms, decode_transfer,
)

LABEL = "SIMULATED"
FAULT_KINDS = ("drop_response", "timeout", "reject", "confirm_late")
INSUFFICIENT_BALANCE = "Move abort in 0x1::fungible_asset: EINSUFFICIENT_BALANCE(0x10004)"
EXECUTED = "Executed successfully"
MEMPOOL_CAPACITY_PER_SENDER = 100  # an Aptos node's default mempool capacity per sender (capacity_per_user)
MEMPOOL_IS_FULL = "MEMPOOL_IS_FULL"

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

    transfer: SignedTransfer[Terms] | None
    fault: Fault | None


@dataclass
class Account:
    sequence_number: int = 0
    mempool: dict[int, SignedTransfer[Terms]] = field(default_factory=dict)
    committed: list[Committed] = field(default_factory=list)  # by sequence number


class SimulatedChain:
    def __init__(self, *, chain_id: int = 4, state_path: str | os.PathLike | None = None,
                 keep_mempool: bool = False, clock_offset_secs: float = 0.0) -> None:
        self.chain_id = chain_id
        self.keep_mempool = keep_mempool
        self._lock = threading.RLock()
        self._offset_us = int(clock_offset_secs * 1_000_000)
        self._accounts: dict[str, Account] = {}
        self._balances: dict[tuple[str, str], int] = {}
        self._committed: dict[str, Committed] = {}
        self._held: set[str] = set()
        self._transfers_before_hold: int | None = None  # None: no hold; n: n more transfers run, later ones wait
        self._faults: deque[Fault] = deque()
        self._version = 0
        self._state_path = Path(state_path) if state_path else None
        self._log: chain_state.AppendLog | None = None
        self._controls_changed = False
        if self._state_path is not None:
            self._resume(self._state_path)

    def _resume(self, state_path: Path) -> None:
        """Replay the committed log, then take the controls (and a kept mempool) from the state document."""
        for entry in chain_state.read_log(chain_state.log_path(state_path)):
            if isinstance(entry, chain_state.Funded):
                self._credit(entry.asset, entry.address, entry.amount)
            else:
                self._replay_commit(entry)
        controls = chain_state.read_controls(state_path, self.chain_id)
        if controls is None:
            self._controls_changed = True  # a new chain keeps the clock offset it was started with
        else:
            self._take(controls)
        self._log = chain_state.AppendLog(chain_state.log_path(state_path))
        self._persist_controls()
        log.info("%s chain: resumed from %s at version %s", LABEL, state_path, self._version)

    def _replay_commit(self, committed: Committed) -> None:
        terms = committed.transfer.terms
        account = self._accounts.setdefault(terms.sender, Account())
        assert terms.sequence_number == account.sequence_number and committed.version == self._version + 1, \
            "the committed log is out of order"
        if committed.success and not isinstance(terms, CommitmentTerms):
            self._move_funds(terms)
        self._record(committed, account)

    def _take(self, controls: chain_state.Controls) -> None:
        self._offset_us = controls.offset_us
        self._faults = deque(Fault(f["kind"], f["hold_ms"] / 1000, f["vm_status"]) for f in controls.faults)
        self._transfers_before_hold = controls.transfers_before_hold
        if self.keep_mempool:
            for sender, waiting in controls.mempool.items():
                account = self._accounts.setdefault(sender, Account())
                account.mempool = {int(sequence): decode_transfer(bytes.fromhex(data))
                                   for sequence, data in waiting.items() if int(sequence) >= account.sequence_number}
        # A held transaction is one the mempool holds back: one the mempool lost is held no more.
        self._held = {transaction_hash for transaction_hash in controls.held if self._pending(transaction_hash)}

    def _controls(self) -> chain_state.Controls:
        mempool = {} if not self.keep_mempool else {
            sender: {str(sequence): transfer.signed_bytes.hex() for sequence, transfer in sorted(account.mempool.items())}
            for sender, account in sorted(self._accounts.items()) if account.mempool}
        return chain_state.Controls(
            self._offset_us, [{"kind": f.kind, "hold_ms": int(f.hold_seconds * 1000), "vm_status": f.vm_status}
                              for f in self._faults],
            sorted(self._held), self._transfers_before_hold, mempool)

    @contextmanager
    def _answering(self) -> Iterator[None]:
        """Hold the chain while a call works. Before it answers, what it (or any call before it) changed is durable:
        the controls are written under the lock, the committed log is synced after it, through everything the call
        could see, sharing one fsync with the calls that answer meanwhile."""
        committed, written = self._log, 0
        try:
            with self._lock:
                try:
                    yield
                finally:
                    written = self._persist_controls()
        finally:
            if committed is not None:
                committed.sync_through(written)

    def _persist_controls(self) -> int:
        """Write the controls if they changed; how much of the committed log must be durable before an answer."""
        if self._state_path is None:
            return 0
        if self._controls_changed:
            chain_state.write_controls(self._state_path, self.chain_id, self._controls())
        self._controls_changed = False
        assert self._log is not None  # a chain with a state path has its log from ``_resume`` until ``close``
        return self._log.written

    def _control_changed(self) -> None:
        self._controls_changed = True

    # Time: wall clock plus an offset, which only ever grows while the chain runs.
    def now_us(self) -> int:
        return time.time_ns() // 1_000 + self._offset_us

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a chain's clock never runs back")
        with self._answering():
            self._offset_us += int(seconds * 1_000_000)
            self._control_changed()
            log.info("%s chain: clock advanced %ss", LABEL, seconds)
            self._execute_ready()

    # Control, for tests and the demo.
    def fund(self, asset_metadata: str, address: str, amount: int) -> None:
        with self._answering():
            self._credit(asset_metadata, address, amount)
            if self._log is not None:
                self._log.append(chain_state.fund_line(asset_metadata, address, amount))
            log.info("%s chain: minted %s of %s to %s", LABEL, amount, asset_metadata, address)

    def _credit(self, asset_metadata: str, address: str, amount: int) -> None:
        self._balances[(asset_metadata, address)] = self._balances.get((asset_metadata, address), 0) + amount
        self._accounts.setdefault(address, Account())

    def inject(self, fault: Fault, times: int = 1) -> None:
        if fault.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {fault.kind!r}; one of {FAULT_KINDS}")
        with self._answering():
            self._faults.extend([fault] * times)
            self._control_changed()

    def hold_transfers_after(self, count: int) -> None:
        """Let the next ``count`` transfers run; accept every later one but hold it until released."""
        with self._answering():
            self._transfers_before_hold = count
            self._control_changed()

    def release(self, transaction_hash: str | None = None, *, count: int | None = None) -> None:
        """Let held transactions execute when their turn comes: one, the ``count`` lowest, or all (ending a hold).

        Releasing ``count`` when fewer are held lets the next transfers to arrive run, up to ``count`` in all.
        """
        with self._answering():
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
            self._control_changed()
            self._execute_ready()

    def _lowest_held(self, count: int) -> list[str]:
        waiting = sorted((transfer.terms.sequence_number, transfer.transaction_hash)
                         for account in self._accounts.values() for transfer in account.mempool.values()
                         if transfer.transaction_hash in self._held)
        return [transaction_hash for _, transaction_hash in waiting[:count]]

    # Reads.
    def balance(self, asset_metadata: str, address: str) -> int:
        with self._lock:
            return self._balances.get((asset_metadata, address), 0)

    def ledger_info(self) -> Document:
        with self._answering():
            self._execute_ready()
            return {"chain_id": self.chain_id, "ledger_version": str(self._version),
                    "ledger_timestamp": str(self.now_us()), "chain": LABEL}

    def sequence_number(self, address: str) -> int | None:
        with self._answering():
            self._execute_ready()
            account = self._accounts.get(address)
            return account.sequence_number if account else None

    def lookup(self, transaction_hash: str) -> Document | None:
        with self._answering():
            self._execute_ready()
            committed = self._committed.get(transaction_hash)
            if committed is not None:
                return _committed_json(committed)
            pending = self._pending(transaction_hash)
            return _pending_json(pending) if pending else None

    def account_transactions(self, address: str, start: int, limit: int) -> list[Document] | None:
        """The sender's committed transactions from sequence ``start``, at most ``limit``; None for no account."""
        with self._answering():
            self._execute_ready()
            account = self._accounts.get(address)
            if account is None:
                return None
            return [_committed_json(committed) for committed in account.committed[start:start + limit]]

    def transfers(self) -> list[Document]:
        """Every committed transfer in version order, successful or not."""
        return self._committed_in_order(commitments=False)

    def anchors(self) -> list[Document]:
        """Every committed commitment in version order: what was anchored, and by which transaction."""
        return self._committed_in_order(commitments=True)

    def _committed_in_order(self, *, commitments: bool) -> list[Document]:
        with self._answering():
            self._execute_ready()
            return [_committed_json(c) for c in sorted(self._committed.values(), key=lambda c: c.version)
                    if c.transfer.is_commitment == commitments]

    # Submission.
    def submit(self, signed_bytes: bytes) -> Submission:
        """Validate and accept a transaction, or raise ``SubmissionRefused``; faults shape the answer."""
        with self._answering():
            return self._submit(signed_bytes)

    def _submit(self, signed_bytes: bytes) -> Submission:
        fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            self._control_changed()
        if fault and fault.kind == "timeout":
            log.info("%s chain: submission lost before acceptance (timeout fault)", LABEL)
            return Submission(None, fault)
        if fault and fault.kind == "reject":
            raise SubmissionRefused(fault.vm_status, "rejected by an injected fault")
        transfer = self._validate(signed_bytes)
        account = self._accounts.setdefault(transfer.terms.sender, Account())
        resubmitted = transfer.terms.sequence_number in account.mempool
        account.mempool[transfer.terms.sequence_number] = transfer
        if self.keep_mempool:
            self._control_changed()
        if (fault and fault.kind == "confirm_late") or (not resubmitted and self._held_by_the_hold(transfer)):
            self._held.add(transfer.transaction_hash)
            self._control_changed()
        log.debug("%s chain: accepted %s (sender %s sequence %s)", LABEL, transfer.transaction_hash,
                 transfer.terms.sender, transfer.terms.sequence_number)
        self._execute_ready()
        return Submission(transfer, fault)

    def _held_by_the_hold(self, transfer: SignedTransfer[Terms]) -> bool:
        if self._transfers_before_hold is None or transfer.is_commitment:
            return False
        if self._transfers_before_hold > 0:
            self._transfers_before_hold -= 1
            return False
        return True

    def _validate(self, signed_bytes: bytes) -> SignedTransfer[Terms]:
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
        if waiting is None and len(account.mempool) >= MEMPOOL_CAPACITY_PER_SENDER:
            raise SubmissionRefused(MEMPOOL_IS_FULL, f"{len(account.mempool)} transactions of {terms.sender} wait "
                                                     f"already; the mempool takes {MEMPOOL_CAPACITY_PER_SENDER}")
        return transfer

    # Execution: each account runs its mempool in sequence order; expired entries are dropped.
    def _execute_ready(self) -> None:
        now = self.now_us()
        for account in self._accounts.values():
            for sequence in sorted(account.mempool):
                if account.mempool[sequence].terms.expiration_secs * 1_000_000 <= now:
                    dropped = account.mempool.pop(sequence)
                    if self.keep_mempool:
                        self._control_changed()
                    log.info("%s chain: %s expired in the mempool", LABEL, dropped.transaction_hash)
            while (ready := account.mempool.get(account.sequence_number)) and ready.transaction_hash not in self._held:
                del account.mempool[account.sequence_number]
                if self.keep_mempool:
                    self._control_changed()
                self._apply(ready, account, now)

    def _apply(self, transfer: SignedTransfer[Terms], account: Account, now: int) -> None:
        terms = transfer.terms
        success = isinstance(terms, CommitmentTerms) or self._move_funds(terms)
        committed = Committed(transfer, self._version + 1, now, success, EXECUTED if success else INSUFFICIENT_BALANCE)
        self._record(committed, account)
        if self._log is not None:
            self._log.append(chain_state.commit_line(committed))
        log.debug("%s chain: committed %s at version %s, success=%s", LABEL, transfer.transaction_hash,
                 self._version, success)

    def _record(self, committed: Committed, account: Account) -> None:
        account.sequence_number += 1
        account.committed.append(committed)
        self._version = committed.version
        self._committed[committed.transfer.transaction_hash] = committed

    def _move_funds(self, terms: TransferTerms) -> bool:
        """A transfer moves its amount if the sender holds it; False (a Move abort) otherwise."""
        source = (terms.asset_metadata, terms.sender)
        if self._balances.get(source, 0) < terms.amount:
            return False
        self._balances[source] -= terms.amount
        target = (terms.asset_metadata, terms.recipient)
        self._balances[target] = self._balances.get(target, 0) + terms.amount
        return True

    def _pending(self, transaction_hash: str) -> SignedTransfer[Terms] | None:
        for account in self._accounts.values():
            for transfer in account.mempool.values():
                if transfer.transaction_hash == transaction_hash:
                    return transfer
        return None

    def close(self) -> None:
        with self._lock:
            if self._log is not None:
                self._log.close()
                self._log = None


def _transfer_json(transfer: SignedTransfer[Terms]) -> Document:
    terms = transfer.terms
    return {
        "hash": transfer.transaction_hash,
        "sender": terms.sender,
        "sequence_number": str(terms.sequence_number),
        "expiration_timestamp_secs": str(terms.expiration_secs),
        "payload": terms.payload_json(),
        "chain": LABEL,
    }


def _pending_json(transfer: SignedTransfer[Terms]) -> Document:
    return {"type": "pending_transaction", **_transfer_json(transfer)}


def _committed_json(committed: Committed) -> Document:
    return {
        "type": "user_transaction",
        **_transfer_json(committed.transfer),
        "version": str(committed.version),
        "timestamp": str(committed.timestamp_us),
        "success": committed.success,
        "vm_status": committed.vm_status,
    }
