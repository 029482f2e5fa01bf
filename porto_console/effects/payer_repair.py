"""A payer's repair: fill the payer's sequence from the chain's next one up, never skipping past one.

Every later transaction of a payer waits behind a sequence the chain does
not hold. That happens when a worker dies right after journalling a
signature (before the ledger recorded it, so it was never broadcast), when
the node loses its mempool (a restart), or when a transaction there expired
while later ones wait. The repair, for the payer this worker signs for:

1. reads the chain's ledger state, the payer's next sequence, the ledger's
   in-flight attempts and the journal's transactions that can still land
   from that sequence up (the latest one at each sequence);
2. gets every journalled signature the ledger has not recorded recorded
   with its exact bytes and broadcast: its payment is carried out again
   (``payment_session``), which claims or renews the payment's effect and
   reuses those bytes. An effect another worker holds under a live claim
   waits for that claim to lapse: the repair asks to run again then;
3. a sequence with no transaction that can still land, below one that can,
   is a hole: the payment last signed there, if the ledger does not hold it
   in flight, is carried out again, and so signed anew at the lowest free
   sequence, the hole itself. Only what has provably expired is signed
   again;
4. broadcasts again, lowest sequence first, every recorded attempt from the
   chain's next sequence up that the chain does not hold.

It runs on the ``payers`` queue, ahead of new payments, when the payer's
follower sees a gap that stays, when the journal check finds a stranded
signature, and when a payment worker starts; every step is idempotent, so
running it again sends the same bytes and duplicates.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ledger_engine.open_json import RecordData
from porto_console.effects import payment_session
from porto_console.effects.effect_worker import Transient, broadcast
from porto_console.effects.ledger_api import LedgerUnreachable
from porto_console.effects.payment_journal import SignedPaymentRecord
from porto_console.effects.payment_session import PaymentWorker

log = logging.getLogger("porto.effects.repair")

OPEN = ("pending", "claimed")
LAPSE_MARGIN_MS = 200  # a repair waiting for a claim runs just after it lapses
AGAIN_SECS = 1.0  # a repair whose payments could not all move now runs again this soon


@dataclass
class RepairReport:
    sequence: int = 0  # the payer's next sequence on chain when the repair looked
    carried_out: int = 0  # payments carried out again: stranded signatures recorded, holes signed
    rebroadcast: int = 0
    lapses_in_ms: int | None = None  # when the soonest claim another worker holds on a stranded payment lapses
    again: bool = False  # some payment could not move now (the console or the chain away, a full window)
    problems: list[str] = field(default_factory=list)

    @property
    def filled(self) -> bool:
        """Whether the repair did all it could now: nothing waits on another worker's claim or a retry."""
        return self.lapses_in_ms is None and not self.again and not self.problems

    def wait_for_lapse(self, lapses_in_ms: int) -> None:
        self.lapses_in_ms = lapses_in_ms if self.lapses_in_ms is None else min(self.lapses_in_ms, lapses_in_ms)

    def summary(self) -> str:
        waiting = "" if self.lapses_in_ms is None else f", a claim lapses in {self.lapses_in_ms} ms"
        waiting += ", some must be tried again" if self.again else ""
        return (f"from sequence {self.sequence}: {self.carried_out} carried out again, {self.rebroadcast} "
                f"broadcast again{waiting}" + "".join(f"; {problem}" for problem in self.problems))


def repair_payer(worker: PaymentWorker, sender: str) -> RepairReport:
    """Fill the payer's sequence as far as can be done now; asks to run again when a claim must lapse first."""
    report = RepairReport()
    if sender != worker.signer.address:
        report.problems.append(f"this worker signs for {worker.signer.address}, not {sender}")
        return report
    ledger = worker.chain.ledger_state()
    report.sequence = worker.chain.sequence_number(sender)
    chain_secs = ledger.timestamp_us // 1_000_000
    in_flight = {attempt["transaction_hash"]: attempt for attempt in worker.api.in_flight_attempts()
                 if attempt["sender_address"] == sender}
    latest = _latest_live(worker, sender, report.sequence, chain_secs)
    stranded = [record for record in latest.values() if record.transaction_hash not in in_flight]
    _carry_out_again(worker, stranded + _holes(worker, sender, report.sequence, latest, in_flight), report)
    _broadcast_again(worker, report.sequence, chain_secs, in_flight, report)
    if report.lapses_in_ms is not None:
        worker.ask_to_repair(sender, (report.lapses_in_ms + LAPSE_MARGIN_MS) / 1000)
    elif report.again:
        worker.ask_to_repair(sender, AGAIN_SECS)
    worker.ask_to_follow(sender)
    log.info("repair of %s: %s", sender, report.summary())
    return report


def _latest_live(worker: PaymentWorker, sender: str, sequence: int,
                 chain_secs: int) -> dict[int, SignedPaymentRecord]:
    """The last journalled transaction at each sequence from ``sequence`` up that can still land."""
    latest: dict[int, SignedPaymentRecord] = {}
    for record in worker.journal.live_from(sender, sequence, chain_secs):
        latest[record.sequence_number] = record
    return dict(sorted(latest.items()))


def _holes(worker: PaymentWorker, sender: str, sequence: int, latest: dict[int, SignedPaymentRecord],
           in_flight: dict[str, RecordData]) -> list[SignedPaymentRecord]:
    """For each sequence below the highest live one with no live transaction: the last one signed there, when the
    ledger does not hold it in flight and it is still its payment's last."""
    expired = []
    for hole in range(sequence, max(latest, default=sequence)):
        if hole in latest:
            continue
        signed_there = worker.journal.at_sequence(sender, hole)
        last = signed_there[-1] if signed_there else None
        if last is not None and last.transaction_hash not in in_flight \
                and worker.journal.last_for(last.payment_id) == last:
            expired.append(last)
    return expired


def _carry_out_again(worker: PaymentWorker, records: list[SignedPaymentRecord], report: RepairReport) -> None:
    """The payments of ``records`` carried out again, for those whose effect this worker may claim now."""
    claimable = []
    now_ms = worker.api.ledger_now_ms()
    for effect_id in dict.fromkeys(record.effect_id for record in records):
        effect = worker.api.effect(effect_id)
        if effect["status"] not in OPEN:
            continue
        holder = effect["claim"]
        if holder is not None and holder["worker_id"] != worker.worker_id and holder["expires_at_ms"] > now_ms:
            report.wait_for_lapse(holder["expires_at_ms"] - now_ms)
            continue
        claimable.append(effect)
    if not claimable:
        return
    try:
        payment_session.carry_out(worker, claimable)
    except (Transient, LedgerUnreachable) as waiting:
        log.info("repair: carrying payments out again must wait: %s", waiting)
        report.again = True
    report.carried_out += len(claimable)


def _broadcast_again(worker: PaymentWorker, sequence: int, chain_secs: int, in_flight: dict[str, RecordData],
                     report: RepairReport) -> None:
    """Every recorded, unexpired attempt from ``sequence`` up that the chain does not hold, lowest first."""
    recorded = sorted((record for record in map(worker.journal.by_hash, in_flight) if record is not None
                       and record.sequence_number >= sequence and record.expiration_secs > chain_secs),
                      key=lambda record: record.sequence_number)
    for record in recorded:
        if worker.chain.transaction(record.transaction_hash) is None:
            report.rebroadcast += broadcast(worker, record)
