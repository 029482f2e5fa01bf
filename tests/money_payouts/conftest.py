"""Payout fixtures: an allocated money world with workers."""

from __future__ import annotations

import pytest

from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.world import PayoutWorld


@pytest.fixture
def payouts(owner, envelopes) -> PayoutWorld:
    with fixture_commands():
        yield PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup()
