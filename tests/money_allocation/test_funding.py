"""ImportFunding: lots fund period budgets, never beyond what a lot received, one funding version each."""

from __future__ import annotations

import pytest

from ledger_engine.errors import LedgerError
from tests.money_allocation.oracle import conservation_problems
from tests.money_allocation.world import FINANCE, INGEST, MoneyWorld, funding
from tests.support import payloads


@pytest.fixture
def periods(world: MoneyWorld) -> MoneyWorld:
    world.period("period-1", "listener-1", days=30)
    world.period("period-2", "listener-2", days=30)
    return world


def test_a_deposit_can_fund_budgets_in_the_same_command(periods: MoneyWorld):
    outcome = periods.lot("lot-1", 1_000, budgets=[funding("budget-1", "period-1", {"lot-1": 600}),
                                                   funding("budget-2", "period-2", {"lot-1": 400})])
    assert outcome.accepted, outcome.result
    assert periods.state("lot/lot-1")["allocated"] == "1000"
    budget = periods.state("budget/budget-1")
    assert (budget["funded"], budget["unallocated"], budget["listener_id"], budget["funding_version"]) == \
        ("600", "600", "listener-1", 1)
    assert budget["lots"] == [{"lot_id": "lot-1", "amount": "600", "version": 1}]
    assert conservation_problems(periods.owner) == []


def test_a_budget_draws_on_several_earlier_lots(periods: MoneyWorld):
    periods.lot("lot-1", 100)
    periods.lot("lot-2", 100)
    assert periods.fund("budget-1", "period-1", {"lot-1": 70, "lot-2": 50}).accepted
    assert (periods.state("lot/lot-1")["allocated"], periods.state("lot/lot-2")["allocated"]) == ("70", "50")
    assert periods.fund("budget-2", "period-2", {"lot-1": 30, "lot-2": 50}).accepted
    assert conservation_problems(periods.owner) == []


def test_a_lot_never_gives_more_than_it_received(periods: MoneyWorld):
    periods.lot("lot-1", 100)
    periods.fund("budget-1", "period-1", {"lot-1": 60})
    periods.assert_rejected_without_change("INSUFFICIENT_FUNDS",
                                   lambda: periods.fund("budget-2", "period-2", {"lot-1": 41}))
    periods.assert_rejected_without_change("INSUFFICIENT_FUNDS", lambda: periods.lot(
        "lot-2", 10, budgets=[funding("budget-2", "period-2", {"lot-2": 6}),
                              funding("budget-3", "period-1", {"lot-2": 5}, version=2)]))


def test_each_period_funding_version_is_taken_once_and_in_order(periods: MoneyWorld):
    periods.lot("lot-1", 1_000)
    assert periods.fund("budget-1", "period-1", {"lot-1": 100}).accepted
    periods.assert_rejected_without_change("ALREADY_EXISTS",
                                   lambda: periods.fund("budget-9", "period-1", {"lot-1": 100}))
    periods.assert_rejected_without_change("INVALID_STATE",
                                   lambda: periods.fund("budget-1", "period-1", {"lot-1": 1}, version=3, actor=FINANCE))
    periods.assert_rejected_without_change("INVALID_REFERENCE",
                                   lambda: periods.fund("budget-1", "period-2", {"lot-1": 1}, version=2, actor=FINANCE))
    assert periods.fund("budget-1", "period-1", {"lot-1": 25}, version=2, actor=FINANCE).accepted
    periods.assert_rejected_without_change("ALREADY_EXISTS",
                                   lambda: periods.fund("budget-1", "period-1", {"lot-1": 1}, version=2, actor=FINANCE))
    budget = periods.state("budget/budget-1")
    assert (budget["funded"], budget["additions"], budget["unallocated"]) == ("100", "25", "125")
    assert conservation_problems(periods.owner) == []


def test_additions_need_finance_approval(periods: MoneyWorld):
    periods.lot("lot-1", 1_000)
    periods.fund("budget-1", "period-1", {"lot-1": 100})
    periods.assert_rejected_without_change("CAPABILITY_MISSING",
                                   lambda: periods.fund("budget-1", "period-1", {"lot-1": 1}, version=2, actor=INGEST))


def test_only_a_period_whose_payment_cleared_is_funded(periods: MoneyWorld):
    periods.lot("lot-1", 1_000)
    for clearance in ("pending", "refunded"):
        periods.period(f"period-{clearance}", "listener-3", days=30, clearance=clearance)
        periods.assert_rejected_without_change("INVALID_STATE",
                                       lambda: periods.fund("budget-3", f"period-{clearance}", {"lot-1": 1}))


def test_references_must_exist(periods: MoneyWorld):
    periods.lot("lot-1", 1_000)
    periods.assert_rejected_without_change("NOT_FOUND", lambda: periods.fund("budget-1", "period-9", {"lot-1": 1}))
    periods.assert_rejected_without_change("NOT_FOUND", lambda: periods.fund("budget-1", "period-1", {"lot-9": 1}))
    periods.assert_rejected_without_change("NOT_FOUND",
                                   lambda: periods.fund("budget-9", "period-1", {"lot-1": 1}, version=2, actor=FINANCE))


@pytest.mark.parametrize("payload", [
    {},  # nothing to import
    {"lot_id": "lot-1"},  # lot fields come together
    {"budgets": [funding("b", "p", {"lot-1": 1})], "conversion_ref": "conv-1"},
    {"budgets": [{**funding("b", "p", {"lot-1": 1, "lot-2": 1}), "draws": [
        {"lot_id": "lot-2", "amount": "1"}, {"lot_id": "lot-1", "amount": "1"}]}]},  # draws out of order
    {"budgets": [funding("b", "p", {"lot-1": 0})]},  # empty draw
    {"budgets": [funding("b", "p", {})]},
    {"budgets": [funding("b", "p", {"lot-1": 1}, version=0)]},
    {"budgets": [{**funding("b", "p", {"lot-1": 1}), "extra": 1}]},
])
def test_malformed_funding_is_refused_before_admission(periods: MoneyWorld, payload):
    head = periods.owner.head()
    with pytest.raises(LedgerError) as raised:
        periods.submit("ImportFunding", payload, actor=INGEST)
    assert raised.value.code in ("INVALID_PAYLOAD", "UNKNOWN_FIELD", "INVALID_AMOUNT")
    assert periods.owner.head() == head


def test_a_plain_deposit_still_imports_a_lot(periods: MoneyWorld):
    payload = payloads.funding("lot-1", "500")
    outcome = periods.submit("ImportFunding", payload, actor=INGEST, evidence=[payloads.deposit_evidence(payload)])
    assert outcome.result["data"] == {"lot_id": "lot-1", "amount": "500", "budgets": []}
    assert periods.state("lot/lot-1")["allocated"] == "0"
