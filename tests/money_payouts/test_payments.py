"""Payments and attempts: their state machine, signed before broadcast, unique sequences, paid once
(docs/spec/domain-model-and-state-machines.md §5)."""

from __future__ import annotations

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.commands.money.attempts import MAX_CHAIN_CLOCK_SKEW_MS
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import EVENTS, OUTBOX, STATE
from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.oracle import payout_problems
from tests.money_payouts.world import (
    COMMITTER, DISPATCHER, DISPATCHER_2, EFFECT, OBSERVER, PAYMENT, SENDER, SIGNED_TTL_MS, SIGNER, WATCHER, PayoutWorld,
    transaction_hash,
)
from tests.support import payloads
from tests.support.step_up import genesis as step_up_genesis


def payment_state(world: PayoutWorld) -> str:
    return world.state(f"payment/{PAYMENT}")["state"]


def state_changes(world: PayoutWorld) -> list[tuple[str, str]]:
    return [(event["from_state"], event["to_state"]) for _, event in world.owner.scan(EVENTS, limit=100_000)
            if event["type"] == "PaymentStateChanged" and event["payment_id"] == PAYMENT]


def test_the_happy_path_walks_seed_001_states_and_pays_once(approved: PayoutWorld):
    budget_before = approved.state("budget/budget-1")
    approved.pay(PAYMENT, "attempt-1")
    assert state_changes(approved) == [("prepared", "approved"), ("approved", "signed"), ("signed", "submitted"),
                                       ("submitted", "confirmed")]
    payment = approved.state(f"payment/{PAYMENT}")
    assert (payment["attempt_ids"], payment["paid_attempt_id"]) == (["attempt-1"], "attempt-1")
    assert {approved.state(f"allocation_line/{line}")["status"] for line in payment["line_ids"]} == {"paid"}
    budget = approved.state("budget/budget-1")
    assert int(budget["outstanding"]) == int(budget_before["outstanding"]) - 112_500
    assert int(budget["paid"]) == int(budget_before["paid"]) + 112_500
    effect = approved.owner.get(OUTBOX, EFFECT).data
    assert (effect["status"], effect["result"]["outcome"]) == ("done", "submitted")
    assert payout_problems(approved.owner) == []


def test_the_attempt_records_exactly_what_was_signed(signed: PayoutWorld):
    attempt = signed.state("payment_attempt/attempt-1")
    assert {name: attempt[name] for name in ("payment_id", "sender_address", "sender_sequence", "signed_bytes_ref",
                                             "transaction_hash", "outcome", "number", "claimed_by")} == {
        "payment_id": PAYMENT, "sender_address": SENDER, "sender_sequence": 0, "signed_bytes_ref": "attempt-1-bytes",
        "transaction_hash": transaction_hash("attempt-1"), "outcome": "pending", "number": 1, "claimed_by": DISPATCHER}
    assert signed.owner.get("unique", f"sender/{SENDER}/{0:020d}").data == {"attempt_id": "attempt-1",
                                                                             "payment_id": PAYMENT}
    assert signed.owner.get("unique", f"transaction/{transaction_hash('attempt-1')}") is not None
    assert payment_state(signed) == "signed"


def test_signing_needs_a_live_claim_by_the_named_worker(approved: PayoutWorld):
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.sign(PAYMENT, "attempt-1"))  # nobody claimed it
    assert approved.claim(EFFECT).accepted
    approved.rejects(ErrorCode.CLAIM_HELD, lambda: approved.sign(PAYMENT, "attempt-1", claimed_by=DISPATCHER_2))
    approved.now_ms += 61_000
    approved.rejects(ErrorCode.CLAIM_EXPIRED, lambda: approved.sign(PAYMENT, "attempt-1"))
    assert approved.claim(EFFECT, actor=DISPATCHER_2).accepted  # nothing was signed: the lapsed claim can be taken
    assert approved.sign(PAYMENT, "attempt-1", claimed_by=DISPATCHER_2).accepted


def test_a_signer_records_an_attempt_under_its_own_claim_only(approved: PayoutWorld):
    """A signer credential without the payer's key must not pin a payment under a worker's live claim."""
    assert approved.claim(EFFECT).accepted
    for actor in (SIGNER, DISPATCHER_2):  # a signer holding no claim; a payment worker holding another one
        approved.rejects(ErrorCode.CLAIM_HELD, lambda: approved.sign(PAYMENT, "attempt-1", actor=actor,
                                                                     claimed_by=DISPATCHER))
    assert payment_state(approved) == "approved"
    assert approved.sign(PAYMENT, "attempt-1", actor=DISPATCHER, claimed_by=DISPATCHER).accepted


@pytest.fixture
def paying_from_the_treasury(ledger_dir, envelopes) -> PayoutWorld:
    """``approved``, on a ledger whose genesis names ``SENDER`` as the payer."""
    with LedgerOwner.open(ledger_dir, genesis=step_up_genesis(payer_address=SENDER)) as owner, fixture_commands():
        world = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup()
        plan = {"artist-a": world.payable_line_ids("artist-a")}
        assert world.prepare("run-1", plan).accepted
        assert world.approve("run-1", world.confirmed_statements(plan)).accepted
        yield world


def test_an_attempt_is_sent_from_the_payer_the_ledger_names(paying_from_the_treasury: PayoutWorld):
    world = paying_from_the_treasury
    assert world.state("payer") == {"payer_address": SENDER}
    stranger = payloads.address("someone-elses-key")
    world.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: world.land(PAYMENT, "attempt-1", sender_address=stranger))
    assert world.claim(EFFECT).accepted
    world.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: world.sign(PAYMENT, "attempt-1", sender_address=stranger))
    assert payment_state(world) == "approved"
    assert world.sign(PAYMENT, "attempt-1").accepted


def test_only_a_worker_of_payments_records_a_payments_chain_observation(signed: PayoutWorld):
    """The committer's credential observes too, but it neither confirms nor fails a payment."""
    for actor in (COMMITTER, OBSERVER):
        signed.rejects(ErrorCode.CAPABILITY_MISSING, lambda: signed.observe("attempt-1", "confirmed", actor=actor))
    assert payment_state(signed) == "signed"
    assert signed.observe("attempt-1", "confirmed").accepted
    assert payment_state(signed) == "confirmed"


def test_a_signer_turned_observer_cannot_attest_its_own_attempt(signed: PayoutWorld):
    """No account holds signer and observer at once, but one can hold them one after the other: the signer of
    attempt-1, given observer in signer's place, still cannot record the chain's word on its own transfer."""
    account = signed.revision(STATE, f"account/{DISPATCHER}")
    turned = signed.money.envelopes.account(DISPATCHER, "worker", ["dispatcher", "observer"], status="active")
    assert signed.owner.submit({**turned, "expected_revisions": [account]}).accepted
    refused = signed.rejects(ErrorCode.FOUR_EYES_REQUIRED,
                             lambda: signed.observe("attempt-1", "confirmed", actor=DISPATCHER))
    assert "signed attempt attempt-1" in refused.result["detail"]
    assert payment_state(signed) == "signed"
    assert signed.state("payment_attempt/attempt-1")["outcome"] == "pending"
    assert signed.observe("attempt-1", "confirmed").accepted  # another credential's word settles it


def test_the_signed_terms_must_be_the_frozen_ones(approved: PayoutWorld):
    assert approved.claim(EFFECT).accepted
    approved.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: approved.sign(PAYMENT, "attempt-1", amount="1"))
    approved.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: approved.sign(PAYMENT, "attempt-1", payout_address=SENDER))
    approved.rejects(ErrorCode.EXPIRED, lambda: approved.sign(PAYMENT, "attempt-1", ttl_ms=-1_000))
    payload = approved.attempt_payload(PAYMENT, "attempt-1")
    approved.rejects(ErrorCode.INVALID_REFERENCE, lambda: approved.submit("RecordSignedAttempt", payload,
                                                                          actor=DISPATCHER))  # bytes not in evidence
    approved.rejects(ErrorCode.CAPABILITY_MISSING, lambda: approved.submit(
        "RecordSignedAttempt", payload, actor="observer-1", evidence=[payload["signed_bytes_hash"]]))


def test_sender_sequences_and_transaction_hashes_are_unique(signed: PayoutWorld):
    other, other_effect = "run-1.artist-b", "run-1.artist-b.effect"
    assert signed.claim(other_effect).accepted
    signed.rejects(ErrorCode.NONCE_REUSED, lambda: signed.sign(other, "attempt-2", sequence=0))
    signed.rejects(ErrorCode.DUPLICATE_EVIDENCE, lambda: signed.sign(
        other, "attempt-2", transaction_hash=transaction_hash("attempt-1")))
    signed.rejects(ErrorCode.ALREADY_EXISTS, lambda: signed.sign(other, "attempt-1"))
    assert signed.sign(other, "attempt-2").accepted


def test_no_fresh_attempt_while_the_last_may_still_land(signed: PayoutWorld):
    signed.rejects(ErrorCode.RECONCILIATION_REQUIRED, lambda: signed.sign(PAYMENT, "attempt-2"))
    assert signed.complete(EFFECT, "unknown", transaction_hash("attempt-1")).accepted
    assert payment_state(signed) == "uncertain"
    signed.rejects(ErrorCode.RECONCILIATION_REQUIRED, lambda: signed.sign(PAYMENT, "attempt-2"))


def test_a_failed_attempt_is_retried_and_the_obligation_paid_once(signed: PayoutWorld):
    assert signed.complete(EFFECT, "submitted", transaction_hash("attempt-1")).accepted
    attempt = signed.state("payment_attempt/attempt-1")
    signed.rejects(ErrorCode.INVALID_TIME, lambda: signed.observe("attempt-1", "expired",
                                                                  chain_time_ms=attempt["expires_at_ms"] - 1))
    assert signed.observe("attempt-1", "failed").accepted
    assert payment_state(signed) == "failed"
    assert {signed.state(f"allocation_line/{line}")["status"]
            for line in signed.state(f"payment/{PAYMENT}")["line_ids"]} == {"reserved"}
    effect = signed.owner.get(OUTBOX, EFFECT).data
    assert (effect["status"], effect["claim"], effect["result"]["observed"]) == ("pending", None, "failed")
    assert payout_problems(signed.owner) == []
    signed.pay(PAYMENT, "attempt-2")
    assert state_changes(signed)[1:] == [("approved", "signed"), ("signed", "submitted"), ("submitted", "failed"),
                                         ("failed", "signed"), ("signed", "submitted"), ("submitted", "confirmed")]
    payment = signed.state(f"payment/{PAYMENT}")
    assert (payment["state"], payment["attempt_ids"], payment["paid_attempt_id"]) == \
        ("confirmed", ["attempt-1", "attempt-2"], "attempt-2")
    assert signed.state("payment_attempt/attempt-2")["number"] == 2
    assert payout_problems(signed.owner) == []


def test_observations_in_any_order_any_number_of_times_pay_once(signed: PayoutWorld):
    assert signed.observe("attempt-1", "confirmed").accepted  # before the broadcast report
    paid_memo = signed.index("paid_total/USDC/artist-a")
    assert paid_memo == {"amount": "112500", "payments": 1}
    for outcome in ("confirmed", "submitted", "confirmed"):
        again = signed.observe("attempt-1", outcome)
        assert again.accepted and again.result["data"]["changed"] is False
    assert signed.index("paid_total/USDC/artist-a") == paid_memo
    signed.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: signed.observe("attempt-1", "failed"))
    signed.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: signed.observe("attempt-1", "expired"))
    signed.rejects(ErrorCode.INVALID_STATE, lambda: signed.complete(EFFECT, "submitted", transaction_hash("attempt-1")))
    assert signed.claim("run-1.artist-a.effect").code == ErrorCode.INVALID_STATE
    signed.rejects(ErrorCode.ALREADY_PAID, lambda: signed.sign(PAYMENT, "attempt-2"))
    assert payment_state(signed) == "confirmed"
    assert payout_problems(signed.owner) == []


def test_an_expired_attempt_is_final(signed: PayoutWorld):
    assert signed.observe("attempt-1", "expired").accepted
    signed.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: signed.observe("attempt-1", "confirmed"))
    signed.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: signed.observe("attempt-1", "submitted"))
    assert signed.observe("attempt-1", "expired").result["data"]["changed"] is False


def test_the_chains_clock_decides_an_expiry_believed_up_to_fifteen_minutes_ahead_of_the_ledgers(signed: PayoutWorld):
    """A chain whose clock runs ahead of the console's expires a transaction before the ledger's clock gets there,
    and the payment is signed again at once; a chain time further ahead than the ledger believes is refused."""
    expires_at_ms = signed.state("payment_attempt/attempt-1")["expires_at_ms"]
    now_ms = signed.now_ms
    assert now_ms < expires_at_ms

    def expired_at(chain_time_ms: int) -> CommandOutcome:
        reading = signed.chain_reading("attempt-1", "expired", chain_time_ms)
        return signed.submit("RecordTransferObservation", {
            "payment_id": PAYMENT, "attempt_id": "attempt-1", "transaction_hash": transaction_hash("attempt-1"),
            "outcome": "expired", **reading}, actor=WATCHER, evidence=[reading["evidence_digest"]])

    signed.rejects(ErrorCode.INVALID_TIME, lambda: expired_at(now_ms + MAX_CHAIN_CLOCK_SKEW_MS + 60_000))
    signed.rejects(ErrorCode.INVALID_TIME, lambda: expired_at(expires_at_ms - 1))
    assert payment_state(signed) == "signed"
    assert expired_at(now_ms + 10 * 60 * 1000).accepted  # the chain ten minutes ahead
    assert signed.now_ms < expires_at_ms and payment_state(signed) == "failed"


def test_a_signed_attempt_is_judged_by_the_chain_time_its_expiry_was_set_from(approved: PayoutWorld):
    """A chain ten minutes behind the console: every expiry it sets lies in the ledger's past."""
    assert approved.claim(EFFECT).accepted
    hour = 60 * 60 * 1000
    chain_ms = approved.now_ms - 10 * 60 * 1000
    expiry = chain_ms + SIGNED_TTL_MS
    approved.rejects(ErrorCode.EXPIRED, lambda: approved.sign(PAYMENT, "attempt-1", expires_at_ms=expiry))
    approved.rejects(ErrorCode.EXPIRED, lambda: approved.sign(PAYMENT, "attempt-1", expires_at_ms=expiry,
                                                              chain_time_ms=expiry))
    approved.rejects(ErrorCode.INVALID_TIME, lambda: approved.sign(PAYMENT, "attempt-1", expires_at_ms=chain_ms + hour + 1,
                                                                   chain_time_ms=chain_ms))
    far_behind = approved.now_ms - MAX_CHAIN_CLOCK_SKEW_MS - 1_000
    approved.rejects(ErrorCode.INVALID_TIME, lambda: approved.sign(PAYMENT, "attempt-1", chain_time_ms=far_behind,
                                                                   expires_at_ms=far_behind + SIGNED_TTL_MS))
    assert payment_state(approved) == "approved"
    assert approved.sign(PAYMENT, "attempt-1", expires_at_ms=expiry, chain_time_ms=chain_ms).accepted
    assert approved.state("payment_attempt/attempt-1")["expires_at_ms"] == expiry


def test_a_signer_cannot_pin_a_payment_with_a_transaction_that_lands_for_more_than_an_hour(approved: PayoutWorld):
    """An attempt in flight can be neither cancelled nor signed again until it lands or expires."""
    assert approved.claim(EFFECT).accepted
    hour = 60 * 60 * 1000
    approved.rejects(ErrorCode.INVALID_TIME, lambda: approved.sign(PAYMENT, "attempt-1", ttl_ms=hour + 1_000))
    assert payment_state(approved) == "approved"
    assert approved.sign(PAYMENT, "attempt-1", ttl_ms=hour - 2_000).accepted


def test_a_lost_broadcast_answer_makes_the_payment_uncertain_until_observed(signed: PayoutWorld):
    assert signed.complete(EFFECT, "unknown", transaction_hash("attempt-1")).accepted
    assert payment_state(signed) == "uncertain"
    assert signed.observe("attempt-1", "submitted").accepted
    assert payment_state(signed) == "submitted"
    assert signed.observe("attempt-1", "confirmed").accepted
    assert state_changes(signed)[-3:] == [("signed", "uncertain"), ("uncertain", "submitted"),
                                          ("submitted", "confirmed")]


def test_observations_must_match_the_recorded_attempt(signed: PayoutWorld):
    attempt = signed.state("payment_attempt/attempt-1")
    base = {"payment_id": PAYMENT, "attempt_id": "attempt-1", "transaction_hash": attempt["transaction_hash"],
            "outcome": "confirmed", "ledger_version": 1, "chain_time_ms": 0, "evidence_digest": "e" * 64}

    def observe(**changes):
        return signed.submit("RecordTransferObservation", {**base, **changes}, actor=WATCHER,
                             evidence=["e" * 64])

    signed.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: observe(transaction_hash=transaction_hash("other")))
    signed.rejects(ErrorCode.INVALID_REFERENCE, lambda: observe(payment_id="run-1.artist-b"))
    signed.rejects(ErrorCode.NOT_FOUND, lambda: observe(attempt_id="attempt-9"))
    signed.rejects(ErrorCode.INVALID_REFERENCE, lambda: signed.submit(
        "RecordTransferObservation", base, actor=WATCHER))  # evidence not listed
    signed.rejects(ErrorCode.CAPABILITY_MISSING, lambda: signed.submit(
        "RecordTransferObservation", base, actor="signer-1", evidence=["e" * 64]))
