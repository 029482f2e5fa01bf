"""RecordLandedAttempt: a transfer the chain committed that a restored ledger never recorded, paid once.

Attack 7: an observer alone, with no claim and an expiry still to come, settled a payment. A landed
attempt needs a reconciled claim: nobody but its signer dispatching the payment, recorded by an observer
of payments that names the signer whose journal holds the bytes, never itself (docs/adr/0090).
"""

from __future__ import annotations

from ledger_engine.domain.chart import TREASURY, reserved_payouts
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import EVENTS, OUTBOX, UNIQUE
from tests.money_payouts.oracle import payout_problems
from tests.money_payouts.world import (
    COMMITTER, DISPATCHER, DISPATCHER_2, EFFECT, OBSERVER, PAYMENT, RECONCILER, SENDER, SIGNED_TTL_MS, SIGNER,
    PayoutWorld, transaction_hash,
)

AMOUNT = 112_500  # artist-a's two days


def events(world: PayoutWorld, event_type: str) -> list[dict]:
    return [event for _, event in world.owner.scan(EVENTS, limit=100_000) if event["type"] == event_type]


def payment_moves(world: PayoutWorld) -> list[tuple[str, str]]:
    return [(event["from_state"], event["to_state"]) for event in events(world, "PaymentStateChanged")
            if event["payment_id"] == PAYMENT]


def test_a_landed_transfer_is_recorded_after_its_expiry_and_pays_once(approved: PayoutWorld):
    budget_before = approved.state("budget/budget-1")
    outcome = approved.land(PAYMENT, "attempt-1", sequence=7)
    assert outcome.accepted, outcome.result
    attempt = approved.state("payment_attempt/attempt-1")
    assert attempt["expires_at_ms"] < approved.now_ms
    assert {name: attempt[name] for name in ("sender_address", "sender_sequence", "signed_bytes_hash",
                                             "transaction_hash", "outcome", "claimed_by", "signed_by", "number")} == {
        "sender_address": SENDER, "sender_sequence": 7, "signed_bytes_hash": approved.attempt_payload(
            PAYMENT, "attempt-1", sequence=7)["signed_bytes_hash"], "transaction_hash": transaction_hash("attempt-1"),
        "outcome": "confirmed", "claimed_by": None, "signed_by": DISPATCHER, "number": 1}
    assert attempt["reconciled"] is True
    payment = approved.state(f"payment/{PAYMENT}")
    assert (payment["state"], payment["attempt_ids"], payment["paid_attempt_id"]) == \
        ("confirmed", ["attempt-1"], "attempt-1")
    assert payment_moves(approved)[1:] == [("approved", "signed"), ("signed", "confirmed")]
    assert {approved.state(f"allocation_line/{line}")["status"] for line in payment["line_ids"]} == {"paid"}
    budget = approved.state("budget/budget-1")
    assert int(budget["outstanding"]) == int(budget_before["outstanding"]) - AMOUNT
    assert int(budget["paid"]) == int(budget_before["paid"]) + AMOUNT
    paid = [event for event in events(approved, "Posted") if event["journal"] == f"payment:{PAYMENT}:paid"]
    assert [event["lines"] for event in paid] == [[
        {"account": reserved_payouts("artist-a"), "side": "debit", "amount": str(AMOUNT)},
        {"account": TREASURY, "side": "credit", "amount": str(AMOUNT)}]]
    assert approved.index("paid_total/USDC/artist-a") == {"amount": str(AMOUNT), "payments": 1}
    assert approved.owner.get(OUTBOX, EFFECT).data["status"] == "done"
    assert approved.owner.get(UNIQUE, f"sender/{SENDER}/{7:020d}").data == {"attempt_id": "attempt-1",
                                                                            "payment_id": PAYMENT}
    assert payout_problems(approved.owner) == []


def test_a_paid_payment_is_never_paid_again(approved: PayoutWorld):
    approved.pay(PAYMENT, "attempt-1")
    approved.rejects(ErrorCode.ALREADY_PAID, lambda: approved.land(PAYMENT, "attempt-2"))
    assert approved.land("run-1.artist-b", "attempt-3").accepted
    approved.rejects(ErrorCode.ALREADY_PAID, lambda: approved.land("run-1.artist-b", "attempt-4"))
    assert len(events(approved, "PaymentPaid")) == 2


def test_an_attempt_in_flight_must_be_observed_first(signed: PayoutWorld):
    signed.rejects(ErrorCode.RECONCILIATION_REQUIRED, lambda: signed.land(PAYMENT, "attempt-2"))


def test_a_recorded_transaction_is_not_recorded_again(signed: PayoutWorld):
    assert signed.observe("attempt-1", "expired").accepted
    signed.rejects(ErrorCode.DUPLICATE_EVIDENCE, lambda: signed.land(
        PAYMENT, "attempt-2", transaction_hash=transaction_hash("attempt-1")))
    signed.rejects(ErrorCode.ALREADY_EXISTS, lambda: signed.land(PAYMENT, "attempt-1"))
    assert signed.land(PAYMENT, "attempt-2").accepted


def test_attack_7_an_observer_alone_cannot_settle_a_payment(approved: PayoutWorld):
    """As the attack had it: an observer, no signer, no claim, an expiry still in the future."""
    signed = approved.attempt_payload(PAYMENT, "attempt-1")
    reading = approved.chain_reading("attempt-1", "confirmed", approved.now_ms)
    payload = {**{k: v for k, v in signed.items() if k != "claimed_by"}, "outcome": "confirmed", **reading,
               "signed_by": DISPATCHER}
    assert payload["expires_at_ms"] > approved.now_ms
    for actor in (OBSERVER, SIGNER, COMMITTER, DISPATCHER_2):
        approved.rejects(ErrorCode.CAPABILITY_MISSING, lambda: approved.submit(
            "RecordLandedAttempt", payload, actor=actor, evidence=[signed["signed_bytes_hash"], reading["evidence_digest"]]))
    assert approved.state(f"payment/{PAYMENT}")["state"] == "approved"
    assert approved.state("payment_attempt/attempt-1") is None


def test_attack_7_a_landed_transfer_respects_the_effects_dispatch_state(approved: PayoutWorld):
    assert approved.claim(EFFECT, actor=DISPATCHER_2).accepted  # another dispatcher holds the payment
    approved.rejects(ErrorCode.CLAIM_HELD, lambda: approved.land(PAYMENT, "attempt-1"))
    assert approved.land(PAYMENT, "attempt-1", signed_by=DISPATCHER_2).accepted  # the holder's own bytes landed


def test_a_landed_transfer_waits_for_another_holders_claim_to_lapse(approved: PayoutWorld):
    assert approved.claim(EFFECT, actor=DISPATCHER_2).accepted
    approved.rejects(ErrorCode.CLAIM_HELD, lambda: approved.land(PAYMENT, "attempt-1"))
    approved.now_ms += 61_000  # the claim lapsed: nobody is dispatching it now
    assert approved.land(PAYMENT, "attempt-1").accepted


def test_attack_7_an_observation_must_cite_chain_evidence(signed: PayoutWorld):
    attempt = signed.state("payment_attempt/attempt-1")
    payload = {"payment_id": PAYMENT, "attempt_id": "attempt-1", "transaction_hash": attempt["transaction_hash"],
               "outcome": "confirmed", "ledger_version": 9, "chain_time_ms": signed.now_ms,
               "evidence_digest": attempt["signed_bytes_hash"]}
    signed.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: signed.submit(
        "RecordTransferObservation", payload, actor=RECONCILER, evidence=[attempt["signed_bytes_hash"]]))
    wrong_transaction = {**payload, "transaction_hash": transaction_hash("another"),
                         "evidence_digest": signed.chain_reading("attempt-1", "confirmed", 0)["evidence_digest"]}
    signed.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: signed.submit(
        "RecordTransferObservation", wrong_transaction, actor=RECONCILER,
        evidence=[wrong_transaction["evidence_digest"]]))
    assert signed.state(f"payment/{PAYMENT}")["state"] == "signed"


def test_a_landed_transfer_is_recorded_with_its_evidence(approved: PayoutWorld):
    approved.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: approved.land(PAYMENT, "attempt-1", amount="1"))
    payload = {**approved.attempt_payload(PAYMENT, "attempt-1", ttl_ms=-SIGNED_TTL_MS), "outcome": "confirmed",
               **approved.chain_reading("attempt-1", "confirmed", approved.now_ms), "signed_by": DISPATCHER}
    del payload["claimed_by"]

    def land_citing(evidence: list[str]):
        return lambda: approved.submit("RecordLandedAttempt", payload, actor=RECONCILER, evidence=evidence)

    approved.rejects(ErrorCode.INVALID_REFERENCE, land_citing([payload["signed_bytes_hash"]]))
    approved.rejects(ErrorCode.INVALID_REFERENCE, land_citing([payload["evidence_digest"]]))
    assert land_citing([payload["signed_bytes_hash"], payload["evidence_digest"]])().accepted


def test_a_landed_failure_keeps_its_sequence_and_the_payment_is_signed_again(approved: PayoutWorld):
    assert approved.land(PAYMENT, "attempt-1", "failed", sequence=3).accepted
    payment = approved.state(f"payment/{PAYMENT}")
    assert (payment["state"], approved.owner.get(OUTBOX, EFFECT).data["status"]) == ("failed", "pending")
    assert {approved.state(f"allocation_line/{line}")["status"] for line in payment["line_ids"]} == {"reserved"}
    assert approved.claim(EFFECT).accepted
    approved.rejects(ErrorCode.NONCE_REUSED, lambda: approved.sign(PAYMENT, "attempt-2", sequence=3))
    assert approved.sign(PAYMENT, "attempt-2").accepted
    assert payout_problems(approved.owner) == []


def test_a_landed_transfer_names_a_signer_other_than_its_observer(approved: PayoutWorld):
    """The observer recording the landed transfer is not its signer, and names an actor provisioned to sign."""
    approved.rejects(ErrorCode.FOUR_EYES_REQUIRED, lambda: approved.land(PAYMENT, "attempt-1", signed_by=RECONCILER))
    for stranger in (OBSERVER, "nobody-1"):
        approved.rejects(ErrorCode.INVALID_REFERENCE, lambda: approved.land(PAYMENT, "attempt-1", signed_by=stranger))
    assert approved.state(f"payment/{PAYMENT}")["state"] == "approved"
    assert approved.land(PAYMENT, "attempt-1", signed_by=SIGNER).accepted
