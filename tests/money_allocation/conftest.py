"""Allocation fixtures: a money world with the streaming stand-in commands registered."""

from __future__ import annotations

import pytest

from tests.money_allocation.world import MoneyWorld, fixture_commands


@pytest.fixture
def world(owner, envelopes) -> MoneyWorld:
    with fixture_commands():
        yield MoneyWorld(owner, envelopes).setup()


@pytest.fixture
def funded(world: MoneyWorld) -> MoneyWorld:
    """Day one of listener-1 closed, its budget funded."""
    return world.fund_day_one()


@pytest.fixture
def allocated(funded: MoneyWorld) -> MoneyWorld:
    """Day one of listener-1 allocated into lines l-0 to l-7."""
    return funded.allocate_day_one()
