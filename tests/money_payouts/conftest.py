"""Payout fixtures: an allocated money world with workers; run-1 approved; its artist-a payment signed."""

from __future__ import annotations

import pytest

from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.world import EFFECT, PAYMENT, PayoutWorld


@pytest.fixture
def payouts(owner, envelopes) -> PayoutWorld:
    with fixture_commands():
        yield PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup()


@pytest.fixture
def approved(payouts: PayoutWorld) -> PayoutWorld:
    """run-1 paying artist-a (``PAYMENT``) and artist-b, approved: both effects pending."""
    plan = {"artist-a": payouts.payable_line_ids("artist-a"), "artist-b": payouts.payable_line_ids("artist-b")}
    assert payouts.prepare("run-1", plan).accepted
    assert payouts.approve("run-1", payouts.confirmed_statements(plan)).accepted
    return payouts


@pytest.fixture
def signed(approved: PayoutWorld) -> PayoutWorld:
    """``PAYMENT``'s attempt-1 recorded at sender sequence 0, not yet broadcast."""
    assert approved.claim(EFFECT).accepted
    outcome = approved.sign(PAYMENT, "attempt-1")
    assert outcome.accepted, outcome.result
    return approved
