"""The signer's journal check (``journal_reconcile``), one case per row of its table, against the SIMULATED chain.

The ledger is a stand-in that answers the internal API's reads and records
commands; the chain, the journal and the signer are real.
"""

from __future__ import annotations

import hashlib
import time

import pytest

from porto_console.effects import journal_reconcile
from porto_console.effects.config import EffectsConfig
from porto_console.effects.ledger_api import Outcome
from porto_console.effects.payment_journal import SignedPaymentJournal, SignedPaymentRecord
from porto_console.effects.payment_session import PaymentWorker
from porto_console.effects.quarantine import Quarantine
from tests.effects.conftest import terms

WORKER = "payments-worker-1"


class StandInLedger:
    """Attempts and effects as the internal API reads them; every command accepted and kept."""

    def __init__(self):
        self.attempts: dict[str, list[dict]] = {}
        self.effects: dict[str, dict] = {}
        self.commands: list[tuple[str, str, dict]] = []

    def payment(self, payment_id):
        return {"sequence": 1, "payment": {"payment_id": payment_id}, "attempts": self.attempts.get(payment_id, [])}

    def effect(self, effect_id):
        return self.effects[effect_id]

    def store_evidence(self, data):
        return hashlib.sha256(data).hexdigest()

    def submit(self, command_type, payload, *, command_id, expected_revisions=(), evidence_hashes=()):
        self.commands.append((command_id, command_type, payload))
        return Outcome(command_id, len(self.commands), "accepted", "OK", {"code": "OK", "data": {}}, False)

    def submit_all(self, commands, evidence=()):
        return [self.submit(command.command_type, command.payload, command_id=command.command_id)
                for command in commands]


@pytest.fixture
def journalled(tmp_path, chain, client, funded, monkeypatch):
    """Six journalled transfers, one for each thing the check can find."""
    ledger, journal = StandInLedger(), SignedPaymentJournal(tmp_path / "signed-payments.jsonl")
    repairs = []
    config = EffectsConfig.from_env({"PORTO_WORKER_ID": WORKER, "PORTO_OBSERVER_ID": f"{WORKER}-observer",
                                     "PORTO_OBSERVER_TOKEN": "observer-token"})
    worker = PaymentWorker(config, ledger, client, funded, journal, ledger,  # one stand-in answers both credentials
                           ask_to_repair=lambda sender, delay_secs: repairs.append((sender, delay_secs)))
    now_secs = client.ledger_state().timestamp_us // 1_000_000

    def journal_transfer(name, sequence, *, expiration_secs=4_000_000_000, claim_expires_ms=None):
        amount = 1_000 + len(ledger.effects)  # each transfer distinct, two at one sequence included
        signed = funded.sign(terms(funded, sequence, expiration_secs=expiration_secs, amount=amount))
        record = SignedPaymentRecord.of(f"run-1.{name}", f"run-1.{name}.effect", WORKER, signed, 0)
        journal.append(record)
        claim = None if claim_expires_ms is None else {"worker_id": WORKER, "expires_at_ms": claim_expires_ms}
        ledger.effects[record.effect_id] = {"effect_id": record.effect_id, "kind": "payment.transfer",
                                            "status": "claimed" if claim else "pending", "revision": 2,
                                            "claim": claim, "payload": {}}
        return record

    records = {
        "recorded-landed": journal_transfer("recorded-landed", 0),
        "unrecorded-landed": journal_transfer("unrecorded-landed", 1),
        "superseded": journal_transfer("superseded", 0),
        "stranded": journal_transfer("stranded", 2),
        "expired": journal_transfer("expired", 3, expiration_secs=now_secs + 1),
        "held": journal_transfer("held", 4, claim_expires_ms=time.time_ns() // 1_000_000 + 600_000),
    }
    ledger.attempts["run-1.recorded-landed"] = [{"transaction_hash": records["recorded-landed"].transaction_hash,
                                                 "outcome": "pending"}]
    client.submit(records["recorded-landed"].signed_bytes)
    client.submit(records["unrecorded-landed"].signed_bytes)  # only a restored ledger can have missed this
    chain.advance(5)
    return worker, ledger, records, repairs


def test_each_journalled_transaction_is_settled_by_what_the_ledger_and_the_chain_say(journalled, tmp_path):
    worker, ledger, records, repairs = journalled
    report = journal_reconcile.reconcile_journal(worker, Quarantine(tmp_path / "q"))
    assert report.as_json() == {"checked": 6, "observed": {"confirmed": 1}, "rebroadcast": 0, "recorded_landed": 1,
                                "stranded": 2, "released": 2, "problems": []}
    kinds = {(command_type, payload["payment_id"], payload["outcome"]) for _, command_type, payload in ledger.commands}
    assert kinds == {("RecordTransferObservation", "run-1.recorded-landed", "confirmed"),
                     ("RecordLandedAttempt", "run-1.unrecorded-landed", "confirmed")}
    landed = next(payload for _, kind, payload in ledger.commands if kind == "RecordLandedAttempt")
    assert landed["signed_bytes_hash"] == records["unrecorded-landed"].signed_bytes_sha256  # the journalled bytes
    assert repairs == [(worker.signer.address, 0)]  # the stranded signatures are the payer's repair's to record


def test_running_it_again_sends_the_same_commands(journalled, tmp_path):
    worker, ledger, _, _ = journalled
    reports = [journal_reconcile.reconcile_journal(worker, Quarantine(tmp_path / "q")).as_json() for _ in range(3)]
    assert reports[0] == reports[1] == reports[2]
    first, second, third = (ledger.commands[run * 2:(run + 1) * 2] for run in range(3))
    assert first == second == third  # same IDs, same content: duplicates for the ledger


def test_a_quarantined_effect_is_no_stranded_signature_to_repair(journalled, tmp_path):
    worker, _, records, repairs = journalled
    quarantine = Quarantine(tmp_path / "q")
    for name in ("stranded", "held"):
        quarantine.add(records[name].effect_id, "payment.transfer", "Poison: refused", 0)
    assert journal_reconcile.reconcile_journal(worker, quarantine).stranded == 0 and repairs == []
