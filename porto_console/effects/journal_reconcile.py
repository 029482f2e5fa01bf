"""A signer settles its own signed-payment journal with the ledger and the chain, at start and on every sweep.

A transaction signed and journalled but never recorded in the ledger (the
console died, or the answer was lost, right after the journal's fsync)
holds its sender sequence: every later transaction waits behind it on the
chain. No operator is needed to clear it. For each of this signer's
transactions that may still matter (expiring after ``HORIZON_SECS`` ago by
chain time), the ledger's view and the chain's are compared:

- **recorded, still in flight in the ledger**: a settled fate on chain is
  recorded (an expiry releases the ledger's hold on its sequence); bytes the
  chain does not know while they can still land are broadcast again;
- **not recorded, committed on chain** (only after a restore):
  ``RecordLandedAttempt`` with the exact journalled bytes;
- **not recorded, could still land, its payment's last transaction**: the
  payer's repair is asked for (``payer_repair``), which gets those exact
  journalled bytes recorded under a claim and broadcast, at once or as soon
  as another worker's claim on the payment lapses;
- **not recorded and proven unable to land** (expired by chain time, or its
  sequence used by another journalled transaction the chain shows
  committed): nothing was sent and nothing is recorded; its sequence is free
  again, because the journal's allocator skips only transactions that can
  still land;
- **the chain contradicts itself** (``ChainContradiction``: its sequence is
  used but the node returns neither it nor another journalled transaction
  there, or answers with other terms): a problem in the report, nothing
  done; the next check looks again.

Every command it sends is named by what it asserts (``payment_session``),
so running it again, any number of times, sends duplicates and changes
nothing. It never signs anything.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ledger_engine.open_json import Report
from porto_console.effects.chain import ChainContradiction, Fate
from porto_console.effects.effect_worker import broadcast, look_up
from porto_console.effects.payment_journal import SignedPaymentRecord
from porto_console.effects.payment_session import (
    OBSERVED_AS, PaymentWorker, ledger_attempt, record_landed, record_observation,
)
from porto_console.effects.journal_port import QuarantinePort

log = logging.getLogger("porto.effects.journal")

HORIZON_SECS = 3600
FINAL = ("confirmed", "failed", "expired")


@dataclass
class JournalReport:
    checked: int = 0
    observed: dict[str, int] = field(default_factory=dict)
    rebroadcast: int = 0
    recorded_landed: int = 0
    stranded: int = 0  # signatures the ledger never recorded that can still land: the payer's repair is asked for
    released: int = 0
    problems: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> Report:
        return {"checked": self.checked, "observed": dict(sorted(self.observed.items())),
                "rebroadcast": self.rebroadcast, "recorded_landed": self.recorded_landed,
                "stranded": self.stranded, "released": self.released, "problems": self.problems}


def reconcile_journal(worker: PaymentWorker, quarantine: QuarantinePort) -> JournalReport:
    """Compare this signer's recent journalled transactions with the ledger and the chain; act on each."""
    report = JournalReport()
    chain_now_secs = worker.chain.ledger_state().timestamp_us // 1_000_000
    for record in worker.journal.expiring_after(worker.signer.address, chain_now_secs - HORIZON_SECS):
        report.checked += 1
        attempt = ledger_attempt(worker, record)
        try:
            if attempt is None:
                _unrecorded(worker, record, quarantine, report)
            elif attempt["outcome"] not in FINAL:
                _in_flight(worker, record, report)
        except ChainContradiction as contradiction:
            log.error("journalled %s of payment %s: %s", record.transaction_hash, record.payment_id, contradiction)
            _problem(report, record, f"the chain cannot say what became of it: {contradiction}")
    if report.stranded:
        worker.ask_to_repair(worker.signer.address, 0)
    return report


def _in_flight(worker: PaymentWorker, record: SignedPaymentRecord, report: JournalReport) -> None:
    seen = look_up(worker, record)
    if seen.fate in (Fate.SUCCESS, Fate.FAILED, Fate.EXPIRED):
        outcome = record_observation(worker, record, seen)
        if outcome.accepted:
            _count(report.observed, OBSERVED_AS[seen.fate])
        else:
            _problem(report, record, f"observation {OBSERVED_AS[seen.fate]} rejected: {outcome.code}")
    elif seen.fate == Fate.UNKNOWN and seen.may_still_land:
        report.rebroadcast += broadcast(worker, record)


def _unrecorded(worker: PaymentWorker, record: SignedPaymentRecord, quarantine: QuarantinePort,
                report: JournalReport) -> None:
    seen = look_up(worker, record)
    if seen.fate in (Fate.SUCCESS, Fate.FAILED):
        outcome = record_landed(worker, record, seen)
        if outcome.accepted:
            report.recorded_landed += 1
        else:
            _problem(report, record, f"landed transaction not recorded: {outcome.code}")
    elif seen.may_still_land:
        if worker.journal.last_for(record.payment_id) == record and not quarantine.contains(record.effect_id):
            log.info("journalled %s of payment %s is not recorded: the payer's repair is asked for",
                     record.transaction_hash, record.payment_id)
            report.stranded += 1
    else:
        report.released += 1


def _count(counts: dict[str, int], name: str) -> None:
    counts[name] = counts.get(name, 0) + 1


def _problem(report: JournalReport, record: SignedPaymentRecord, problem: str) -> None:
    report.problems.append({"payment_id": record.payment_id, "transaction_hash": record.transaction_hash,
                            "problem": problem})
