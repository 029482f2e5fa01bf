"""Announcing after commit: every effect a command of this process created goes to the workers once,
only when dispatch is on, and a failed announcement never fails the command."""

from __future__ import annotations

import logging

import pytest

from ledger_engine.layout import OUTBOX
from porto_console.effects import delivery
from porto_console.ledger import gateway
from tests.console.conftest import code_for
from tests.console.test_payouts import approve, prepare
from tests.conftest import GENESIS_ADMIN
from tests.money_allocation.world import FINANCE, FINANCE_2
from tests.support.dispatch_switch import pause


@pytest.fixture
def announced(monkeypatch, effects_settings) -> list[dict]:
    """What the console announces, with announcements turned on as with a broker and a signer."""
    effects_settings.EFFECTS_ENABLED = True
    sent: list[dict] = []
    monkeypatch.setattr(delivery, "announce", lambda effects: sent.extend(effects))
    return sent


def approve_a_run(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    response = approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2))
    assert "Payout run approved" in response.content.decode()
    return payouts_world.state(f"payment_run/{run_id}")


def test_an_approval_announces_each_payment_effect_as_the_workers_list_it(finance, payouts_world, announced):
    run = approve_a_run(finance, payouts_world)
    effect_ids = [payment["effect_id"] for payment in run["frozen"]["payments"]]
    records = [payouts_world.owner.get(OUTBOX, effect_id) for effect_id in effect_ids]
    assert sorted(announced, key=lambda effect: effect["effect_id"]) == sorted(
        ({**record.data, "revision": record.revision} for record in records), key=lambda effect: effect["effect_id"])
    assert {effect["kind"] for effect in announced} == {"payment.transfer"}
    assert {effect["status"] for effect in announced} == {"pending"}


def test_preparing_a_run_creates_no_effect_and_announces_nothing(finance, payouts_world, announced):
    prepare(finance[FINANCE])
    assert announced == []


def test_a_resubmitted_approval_is_answered_from_the_journal_and_not_announced_again(finance, payouts_world,
                                                                                     announced):
    """The internal API's retry path: the gateway submits the stored envelope again."""
    run = approve_a_run(finance, payouts_world)
    assert len(announced) == len(run["frozen"]["payments"])
    approval = payouts_world.owner.journal_entry(payouts_world.owner.head().sequence)["envelope"]
    assert approval["command_type"] == "ApprovePayoutRun"
    outcome = gateway().submit(approval)
    assert outcome.duplicate and outcome.accepted
    assert len(announced) == len(run["frozen"]["payments"])


def test_nothing_is_announced_while_dispatch_is_disabled(finance, payouts_world, announced):
    pause(payouts_world.owner, actor=GENESIS_ADMIN)
    approve_a_run(finance, payouts_world)
    assert announced == []


def test_nothing_is_announced_without_configured_workers(finance, payouts_world, announced, effects_settings):
    effects_settings.EFFECTS_ENABLED = False
    approve_a_run(finance, payouts_world)
    assert announced == []


def test_a_failed_announcement_is_logged_and_the_command_stands(finance, payouts_world, monkeypatch,
                                                                 effects_settings, caplog):
    effects_settings.EFFECTS_ENABLED = True

    def broker_down(effects):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(delivery, "announce", broker_down)
    with caplog.at_level(logging.ERROR, logger="porto.console.ledger"):
        run = approve_a_run(finance, payouts_world)
    assert run["status"] == "approved"
    for payment in run["frozen"]["payments"]:
        assert payouts_world.owner.get(OUTBOX, payment["effect_id"]).data["status"] == "pending"
    assert "the sweep will send them" in caplog.text and "broker unreachable" in caplog.text
