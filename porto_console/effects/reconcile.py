"""Reconcile after a restore: the chain and the signed-payment journal against the ledger, before dispatch resumes.

A restored ledger forgets everything after its backup, but the chain and
the independent signed-payment journal do not. For every transaction the
journal holds, reconcile asks the chain what became of it and records that
in the ledger as commands:

- settled on chain (confirmed, failed, expired) or still pending: the
  observation is recorded, so the payment moves on and is never signed
  again for a transfer that landed;
- a transfer the chain committed that the restored ledger never heard of,
  before or after its expiry: ``RecordLandedAttempt`` records the exact
  journalled attempt together with its observation (no claim: dispatch is
  disabled, and nothing is left to broadcast);
- an unrecorded transaction that could still land: a discrepancy, until its
  expiry has passed and reconcile runs again. So is a landed transfer the
  ledger refuses to record, and a transaction the chain cannot settle
  (``ChainContradiction``: its sequence used, but neither it nor another
  journalled transaction at it returned).

Every observation and landed transfer is recorded under the payment worker's
observer credential (``PORTO_OBSERVER_ID``), never the signer's (docs/adr/0090).
It broadcasts nothing and signs nothing. Dispatch stays disabled; the report
says whether it is safe for an operator to resume it. Every command is named
by what it asserts, so reconcile may run any number of times: a repeat
sends the same commands, the ledger answers them as duplicates, and the
report is the same.

    python -m porto_console.effects.reconcile     # worker environment; exit 0 safe, 1 discrepancies
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import orjson

from ledger_engine import open_json
from porto_console.effects.chain import ChainContradiction, Fate
from porto_console.effects.effect_worker import look_up
from porto_console.effects.payment_journal import SignedPaymentRecord
from porto_console.effects.payment_session import (
    OBSERVED_AS, PaymentWorker, ledger_attempt, record_landed, record_observation,
)


@dataclass
class Report:
    checked: int = 0
    observed: dict[str, int] = field(default_factory=dict)
    recorded_attempts: int = 0
    discrepancies: list[open_json.Report] = field(default_factory=list)

    @property
    def safe_to_resume(self) -> bool:
        return not self.discrepancies

    def as_json(self) -> open_json.Report:
        return {"checked": self.checked, "observed": dict(sorted(self.observed.items())),
                "recorded_attempts": self.recorded_attempts, "discrepancies": self.discrepancies,
                "safe_to_resume": self.safe_to_resume}


def reconcile(worker: PaymentWorker) -> Report:
    report = Report()
    for record in _latest_per_transaction(worker):
        report.checked += 1
        try:
            seen = look_up(worker, record)
        except ChainContradiction as contradiction:
            _discrepancy(report, record, f"the chain cannot say what became of it: {contradiction}")
            continue
        attempt = ledger_attempt(worker, record)
        if seen.fate == Fate.UNKNOWN:
            if attempt is None and seen.may_still_land:
                _discrepancy(report, record, f"could land until {record.expiration_secs} and the ledger has no "
                                             "attempt: reconcile again after that time")
            continue
        if seen.fate == Fate.SUCCESS and (attempt is None or attempt["claimed_by"] is None):
            # Landed without the restored ledger's knowledge; a later run sends the same command again.
            outcome = record_landed(worker, record, seen)
            report.recorded_attempts += outcome.accepted
        elif attempt is not None:
            outcome = record_observation(worker, record, seen)
        else:
            continue  # signed, never recorded, paid nothing: nothing happened
        if not outcome.accepted:
            _discrepancy(report, record, f"observation {OBSERVED_AS[seen.fate]} rejected: {outcome.code}")
            continue
        report.observed[OBSERVED_AS[seen.fate]] = report.observed.get(OBSERVED_AS[seen.fate], 0) + 1
    return report


def _latest_per_transaction(worker: PaymentWorker) -> list[SignedPaymentRecord]:
    return list({record.transaction_hash: record for record in worker.journal.records()}.values())


def _discrepancy(report: Report, record: SignedPaymentRecord, problem: str) -> None:
    report.discrepancies.append({"payment_id": record.payment_id, "transaction_hash": record.transaction_hash,
                                 "problem": problem})


def main() -> int:
    from porto_console.effects.tasks import payment_worker

    started = time.monotonic()
    report = reconcile(payment_worker())
    sys.stdout.buffer.write(orjson.dumps({**report.as_json(), "seconds": round(time.monotonic() - started, 3)}) + b"\n")
    return 0 if report.safe_to_resume else 1


if __name__ == "__main__":
    sys.exit(main())
