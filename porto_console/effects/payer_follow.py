"""A payer's follower: one watcher for the payer's whole sequence, recording the fate of every transaction.

On Aptos a sender's transactions commit in sequence order, so the payer's
in-flight transactions are one queue, not many: what the chain committed
lies below the sender's next sequence, and nothing above it commits before
the transaction at it, the *head*. One pass (``settle_once``):

- reads the chain's ledger state first, then the payer's next sequence, then
  the payer's committed transactions from the lowest one in flight (pages of
  an Aptos node's account transactions): every later look covers every block
  up to that ledger state;
- decides the fate of each in-flight attempt the ledger lists for the payer
  that the chain has passed (below the next sequence) or whose expiry the
  chain's clock has passed, with the rules of ``chain.observe``, and records
  them all with their evidence in one round trip;
- looks at the head: pending on chain is waiting; absent, while something
  waits above it or a journalled signature is there, is a *gap*.

``follow_payer`` repeats passes. It waits (up to the observe window) only
while the head is pending on chain: nothing above a gap can commit, so a gap
that stays one second (what a worker between recording and broadcasting can
leave), however short the window, is handed to the payer's repair
(``payer_repair``) at once, and if the repair must wait for a claim to
lapse, the follower returns rather than watch what cannot land. An attempt whose transaction this signer's journal
does not hold cannot be followed: its effect is parked for an operator.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from porto_console.effects import payer_repair
from porto_console.effects.chain import ChainClient, ChainContradiction, ChainTransaction, LedgerState, observe
from porto_console.effects.effect_worker import SETTLED, NotYet, Poison
from porto_console.effects.ledger_api import LedgerUnreachable
from porto_console.effects.payment_journal import SignedPaymentRecord
from porto_console.effects.payment_session import PaymentWorker, record_observations, refused_observation

log = logging.getLogger("porto.effects.payer")

POLL_SECS = 0.2
GAP_GRACE_SECS = 1.0  # a head missing this long is a gap, not a worker between recording and broadcasting
PAGE = 100  # an Aptos node's largest page of account transactions


@dataclass(frozen=True, slots=True)
class Pass:
    """What one look at the payer's sequence found."""

    sequence: int  # the payer's next sequence on chain
    recorded: int  # fates recorded in this pass
    in_flight: int  # attempts still in flight afterwards
    gap: int | None  # the head's sequence when the chain does not hold it and it blocks others
    problems: tuple[str, ...] = ()


class KnownChain:
    """The chain as one read saw it: its ledger state, the payer's next sequence and committed transactions.

    Lookups of other transactions go to the node, after that read, so they cover every block up to it.
    """

    def __init__(self, chain: ChainClient, ledger: LedgerState, sender: str, sequence: int,
                 committed: dict[str, ChainTransaction]) -> None:
        self.chain, self.ledger, self.sender, self.sequence, self.committed = chain, ledger, sender, sequence, committed
        self.label = chain.label

    def ledger_state(self) -> LedgerState:
        return self.ledger

    def sequence_number(self, address: str) -> int:
        return self.sequence if address == self.sender else self.chain.sequence_number(address)

    def transaction(self, transaction_hash: str) -> ChainTransaction | None:
        return self.committed.get(transaction_hash.lower()) or self.chain.transaction(transaction_hash)


def follow_payer(worker: PaymentWorker, sender: str, *, window_secs: float | None = None) -> str:
    """Record the fate of the payer's transactions until none is in flight; repair a gap that stays.

    Raises ``NotYet`` when the head is still pending on chain after the observe window.
    """
    window = worker.config.observe_window_secs if window_secs is None else window_secs
    deadline = time.monotonic() + window
    missing: tuple[int, float] | None = None  # the head seen missing, and since when
    while True:
        this = settle_once(worker, sender)
        if this.gap is None:
            missing = None
        elif missing is None or missing[0] != this.gap:
            missing = (this.gap, time.monotonic())
        elif time.monotonic() - missing[1] >= GAP_GRACE_SECS:
            repaired = payer_repair.repair_payer(worker, sender)
            if not repaired.filled:
                return f"sequence {this.gap} waits for its repair: {repaired.summary()}"
            missing = None
        if this.in_flight == 0:
            return f"settled: nothing of {sender} in flight at sequence {this.sequence}"
        if this.gap is None and time.monotonic() >= deadline:  # the window is for a head pending on chain
            raise NotYet(f"{this.in_flight} in flight at sequence {this.sequence} after {window}s")
        time.sleep(POLL_SECS)


def settle_once(worker: PaymentWorker, sender: str) -> Pass:
    """One look at the payer's sequence: record what the chain settled, and say whether the head is a gap."""
    ledger = worker.chain.ledger_state()  # first: every later read covers every block up to it
    sequence = worker.chain.sequence_number(sender)
    records = _in_flight(worker, sender)
    due = [record for record in records
           if record.sequence_number < sequence or record.expiration_secs * 1_000_000 < ledger.timestamp_us]
    view = KnownChain(worker.chain, ledger, sender, sequence, _committed(worker, sender, due, sequence))
    settled, problems = _fates(worker, view, due)
    recorded = _record(worker, settled)
    remaining = [record for record in records if record.transaction_hash not in recorded]
    gap = _gap(worker, sender, sequence, ledger, remaining)
    return Pass(sequence, len(recorded), len(remaining), gap, tuple(problems))


def _in_flight(worker: PaymentWorker, sender: str) -> list[SignedPaymentRecord]:
    """The payer's attempts the ledger lists in flight, as this signer journalled them; the others are parked."""
    records = []
    for attempt in worker.api.in_flight_attempts():
        if attempt["sender_address"] != sender:
            continue
        record = worker.journal.by_hash(attempt["transaction_hash"])
        if record is None:
            worker.park(attempt["effect_id"], Poison(
                f"{attempt['transaction_hash']} of effect {attempt['effect_id']} is not in "
                f"{worker.journal.location}: this signer cannot follow it", attempt["effect_id"]))
            continue
        records.append(record)
    return sorted(records, key=lambda record: record.sequence_number)


def _committed(worker: PaymentWorker, sender: str, due: list[SignedPaymentRecord],
               sequence: int) -> dict[str, ChainTransaction]:
    """The payer's committed transactions from the lowest due one below ``sequence`` up to it, by hash."""
    start = min((record.sequence_number for record in due if record.sequence_number < sequence), default=sequence)
    committed: dict[str, ChainTransaction] = {}
    while start < sequence:
        page = worker.chain.account_transactions(sender, start, min(PAGE, sequence - start))
        if not page:
            break
        committed.update((found.transaction_hash.lower(), found) for found in page)
        start += len(page)
    return committed


def _fates(worker: PaymentWorker, view: KnownChain,
           due: list[SignedPaymentRecord]) -> tuple[list[tuple[SignedPaymentRecord, Any]], list[str]]:
    settled, problems = [], []
    for record in due:
        try:
            seen = observe(view, record, partial(worker.journal.at_sequence, record.sender, record.sequence_number))
        except ChainContradiction as contradiction:
            log.error("payment %s, %s: %s", record.payment_id, record.transaction_hash, contradiction)
            problems.append(f"{record.transaction_hash}: {contradiction}")
            continue
        if seen.fate in SETTLED:
            settled.append((record, seen))
    return settled, problems


def _record(worker: PaymentWorker, settled: list[tuple[SignedPaymentRecord, Any]]) -> set[str]:
    """Record every settled fate; the transactions the ledger took. A refused one is parked for an operator."""
    if not settled:
        return set()
    taken = set()
    for (record, seen), answer in zip(settled, record_observations(worker, settled)):
        if isinstance(answer, LedgerUnreachable):
            log.info("observation of %s not recorded yet: %s", record.transaction_hash, answer)
            continue
        refused = refused_observation(record, seen, answer)
        if refused is None:
            taken.add(record.transaction_hash)
        else:
            worker.park(record.effect_id, refused)
    return taken


def _gap(worker: PaymentWorker, sender: str, sequence: int, ledger: LedgerState,
         remaining: list[SignedPaymentRecord]) -> int | None:
    """``sequence`` when the chain does not hold the transaction there while others wait on it, else None."""
    head = next((record for record in remaining if record.sequence_number == sequence), None)
    if head is not None:
        return None if worker.chain.transaction(head.transaction_hash) is not None else sequence
    blocked = any(record.sequence_number > sequence for record in remaining)
    signed_there = any(record.sequence_number == sequence for record in
                       worker.journal.live_from(sender, sequence, ledger.timestamp_us // 1_000_000))
    return sequence if blocked or signed_there else None
