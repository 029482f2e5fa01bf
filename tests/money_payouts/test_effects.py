"""ClaimEffect and CompleteEffect: exclusive expiring leases, renewal by the holder, no fresh transfer from a lapsed claim."""

from __future__ import annotations

import pytest

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import OUTBOX
from tests.money_payouts.world import COMMITTER, DISPATCHER, DISPATCHER_2, SIGNER, PayoutWorld, transaction_hash

PAYMENT, EFFECT = "run-1.artist-a", "run-1.artist-a.effect"


@pytest.fixture
def approved(payouts: PayoutWorld) -> PayoutWorld:
    plan = {"artist-a": payouts.payable_line_ids("artist-a")}
    assert payouts.prepare("run-1", plan).accepted
    assert payouts.approve("run-1", payouts.confirmed_statements(plan)).accepted
    return payouts


def effect(world: PayoutWorld) -> dict:
    return world.owner.get(OUTBOX, EFFECT).data


def test_a_claim_is_an_exclusive_lease_with_an_explicit_expiry(approved: PayoutWorld):
    outcome = approved.claim(EFFECT, lease_ms=30_000)
    assert outcome.accepted, outcome.result
    claim = effect(approved)["claim"]
    assert claim == {"worker_id": DISPATCHER, "claimed_at_ms": approved.now_ms, "expires_at_ms": approved.now_ms + 30_000}
    assert (effect(approved)["status"], effect(approved)["attempts"]) == ("claimed", 1)
    approved.rejects(ErrorCode.CLAIM_HELD, lambda: approved.claim(EFFECT, actor=DISPATCHER_2))


def test_only_the_current_worker_renews_and_only_before_expiry(approved: PayoutWorld):
    assert approved.claim(EFFECT).accepted
    renewed = approved.claim(EFFECT, lease_ms=120_000)
    assert renewed.accepted and renewed.result["data"]["renewal"] is True
    assert effect(approved)["claim"]["expires_at_ms"] == approved.now_ms + 120_000
    assert effect(approved)["attempts"] == 1
    approved.now_ms += 121_000
    retaken = approved.claim(EFFECT, actor=DISPATCHER_2)  # lapsed, and nothing was signed under it
    assert retaken.accepted and retaken.result["data"]["renewal"] is False
    assert (effect(approved)["claim"]["worker_id"], effect(approved)["attempts"]) == (DISPATCHER_2, 2)


def test_a_claim_names_the_outbox_revision_it_saw(approved: PayoutWorld):
    payload = {"effect_id": EFFECT, "expires_at_ms": approved.now_ms + 30_000}
    approved.rejects(ErrorCode.STALE_REVISION, lambda: approved.submit("ClaimEffect", payload, actor=DISPATCHER))
    stale = [{"cf": "outbox", "key": EFFECT, "revision": 1}]
    assert approved.claim(EFFECT).accepted
    approved.rejects(ErrorCode.STALE_REVISION, lambda: approved.submit(
        "ClaimEffect", {**payload, "expires_at_ms": approved.now_ms + 30_000}, actor=DISPATCHER, expected=stale))


@pytest.mark.parametrize("lease_ms, code", [(-1_000, ErrorCode.INVALID_TIME), (3_600_001, ErrorCode.INVALID_TIME)])
def test_a_lease_ends_after_admission_and_within_an_hour(approved: PayoutWorld, lease_ms, code):
    approved.rejects(code, lambda: approved.claim(EFFECT, lease_ms=lease_ms))


def test_each_kind_is_worked_by_its_role(approved: PayoutWorld):
    approved.rejects(ErrorCode.CAPABILITY_MISSING, lambda: approved.claim(EFFECT, actor=COMMITTER))
    approved.rejects(ErrorCode.CAPABILITY_MISSING, lambda: approved.claim(EFFECT, actor=SIGNER))
    approved.rejects(ErrorCode.NOT_FOUND, lambda: approved.submit(
        "ClaimEffect", {"effect_id": "no-such-effect", "expires_at_ms": approved.now_ms + 5_000}, actor=DISPATCHER,
        expected=[{"cf": "outbox", "key": "no-such-effect", "revision": None}]))


def test_a_lapsed_claim_over_a_signed_attempt_needs_reconciliation(approved: PayoutWorld):
    assert approved.claim(EFFECT).accepted
    assert approved.sign(PAYMENT, "attempt-1").accepted
    approved.now_ms += 61_000  # the dispatcher vanished: did it broadcast?
    approved.rejects(ErrorCode.RECONCILIATION_REQUIRED, lambda: approved.claim(EFFECT, actor=DISPATCHER_2))
    approved.rejects(ErrorCode.RECONCILIATION_REQUIRED, lambda: approved.claim(EFFECT))
    approved.rejects(ErrorCode.CLAIM_EXPIRED, lambda: approved.complete(EFFECT, "submitted", transaction_hash("attempt-1")))
    approved.now_ms = approved.state("payment_attempt/attempt-1")["expires_at_ms"]
    assert approved.observe("attempt-1", "expired").accepted  # the chain proves it can never land
    assert approved.claim(EFFECT, actor=DISPATCHER_2).accepted
    assert approved.sign(PAYMENT, "attempt-2", claimed_by=DISPATCHER_2).accepted


def test_attack_8_an_in_flight_transfer_is_neither_released_nor_taken_without_reconciliation(approved: PayoutWorld):
    """Releasing a transfer whose attempt was recorded let another worker claim it, unreconciled."""
    assert approved.claim(EFFECT).accepted
    assert approved.sign(PAYMENT, "attempt-1").accepted
    approved.rejects(ErrorCode.RECONCILIATION_REQUIRED, lambda: approved.complete(EFFECT, "released"))
    assert effect(approved)["status"] == "claimed"
    approved.now_ms += 61_000  # the holder vanished: a worker taking over meets the attempt in flight
    approved.rejects(ErrorCode.RECONCILIATION_REQUIRED, lambda: approved.claim(EFFECT, actor=DISPATCHER_2))
    assert approved.complete(EFFECT, "released", actor=DISPATCHER).code == "CLAIM_EXPIRED"
    assert approved.observe("attempt-1", "failed").accepted  # observed: now another worker may take it
    assert approved.claim(EFFECT, actor=DISPATCHER_2).accepted


def test_completion_is_for_the_live_holder(approved: PayoutWorld):
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.complete(EFFECT, "released"))
    assert approved.claim(EFFECT).accepted
    approved.rejects(ErrorCode.CLAIM_HELD, lambda: approved.complete(EFFECT, "released", actor=DISPATCHER_2))
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.complete(
        EFFECT, "submitted", transaction_hash("attempt-1")))  # nothing signed yet
    released = approved.complete(EFFECT, "released")
    assert released.accepted
    assert (effect(approved)["status"], effect(approved)["claim"]) == ("pending", None)


def test_a_transfer_report_names_the_signed_transaction(approved: PayoutWorld):
    assert approved.claim(EFFECT).accepted
    assert approved.sign(PAYMENT, "attempt-1").accepted
    approved.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: approved.complete(
        EFFECT, "submitted", transaction_hash("something-else")))
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.complete(EFFECT, "failed"))
    assert approved.complete(EFFECT, "submitted", transaction_hash("attempt-1")).accepted
    assert effect(approved)["result"] == {"outcome": "submitted", "attempt_id": "attempt-1",
                                          "transaction_hash": transaction_hash("attempt-1")}
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.claim(EFFECT))


@pytest.mark.parametrize("outcome, tx", [("submitted", None), ("released", "0x" + "a" * 64), ("failed", "0x" + "a" * 64)])
def test_a_transaction_hash_comes_with_sent_outcomes_only(approved: PayoutWorld, outcome, tx):
    head = approved.owner.head()
    with pytest.raises(LedgerError) as refused:
        approved.complete(EFFECT, outcome, tx)
    assert refused.value.code == ErrorCode.INVALID_PAYLOAD
    assert approved.owner.head() == head
