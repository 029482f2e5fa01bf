"""Sender sequences: one the chain left unused (an expired attempt) is signed again; one it used never is."""

from __future__ import annotations

import pytest

from ledger_engine.errors import ErrorCode
from ledger_engine.layout import UNIQUE
from tests.money_payouts.oracle import payout_problems
from tests.money_payouts.world import EFFECT, PAYMENT, SENDER, PayoutWorld, transaction_hash

OTHER, OTHER_EFFECT = "run-1.artist-b", "run-1.artist-b.effect"
SEQUENCE_0 = f"sender/{SENDER}/{0:020d}"


def sentinel(world: PayoutWorld, sentinel_key: str) -> dict | None:
    record = world.owner.get(UNIQUE, sentinel_key)
    return record.data if record else None


def test_an_expired_attempt_frees_its_sequence_for_the_next_transfer(signed: PayoutWorld):
    assert signed.observe("attempt-1", "expired").accepted
    assert sentinel(signed, SEQUENCE_0) is None
    assert sentinel(signed, f"transaction/{transaction_hash('attempt-1')}") == {"attempt_id": "attempt-1",
                                                                                "payment_id": PAYMENT}
    assert signed.claim(OTHER_EFFECT).accepted
    assert signed.sign(OTHER, "attempt-2", sequence=0).accepted
    assert sentinel(signed, SEQUENCE_0) == {"attempt_id": "attempt-2", "payment_id": OTHER}
    assert signed.observe("attempt-1", "expired").result["data"]["changed"] is False  # a repeat frees nothing
    assert sentinel(signed, SEQUENCE_0) == {"attempt_id": "attempt-2", "payment_id": OTHER}
    assert signed.claim(EFFECT).accepted  # the expired payment is signed again, at a fresh sequence
    signed.rejects(ErrorCode.NONCE_REUSED, lambda: signed.sign(PAYMENT, "attempt-3", sequence=0))
    assert signed.sign(PAYMENT, "attempt-3").accepted
    assert signed.complete(OTHER_EFFECT, "submitted", transaction_hash("attempt-2")).accepted
    assert signed.observe("attempt-2", "confirmed").accepted
    assert signed.observe("attempt-3", "confirmed").accepted
    assert {signed.state(f"payment/{payment}")["state"] for payment in (PAYMENT, OTHER)} == {"confirmed"}
    assert payout_problems(signed.owner) == []


def test_an_expired_transaction_is_never_recorded_again(signed: PayoutWorld):
    assert signed.observe("attempt-1", "expired").accepted
    assert signed.claim(EFFECT).accepted
    signed.rejects(ErrorCode.DUPLICATE_EVIDENCE, lambda: signed.sign(
        PAYMENT, "attempt-2", sequence=0, transaction_hash=transaction_hash("attempt-1")))
    assert signed.sign(PAYMENT, "attempt-2", sequence=0).accepted


@pytest.mark.parametrize("outcome", ["confirmed", "failed"])  # executed, or executed and aborted
def test_a_sequence_the_chain_used_is_never_signed_again(signed: PayoutWorld, outcome: str):
    assert signed.observe("attempt-1", outcome).accepted
    signed.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: signed.observe("attempt-1", "expired"))
    assert signed.claim(OTHER_EFFECT).accepted
    signed.rejects(ErrorCode.NONCE_REUSED, lambda: signed.sign(OTHER, "attempt-2", sequence=0))
    assert sentinel(signed, SEQUENCE_0) == {"attempt_id": "attempt-1", "payment_id": PAYMENT}
    assert signed.sign(OTHER, "attempt-2").accepted
