"""Budgets and balances: each budget's conservation equation with its terms, payables per recipient."""

from __future__ import annotations

from ledger_engine.amounts import parse_amount
from porto_console.console.templatetags.console import money
from tests.money_allocation.world import FINANCE
from tests.money_payouts.world import RECIPIENTS
from tests.console.recipients import unnamed


def shown(minor_units: str) -> str:
    """An amount as the screens show it with the raw toggle off."""
    return money({}, minor_units)


def test_each_budget_shows_both_sides_of_its_equation(finance, payouts_world):
    budget = payouts_world.state("budget/budget-1")
    page = finance[FINANCE].get("/ledger/budgets/").content.decode()
    row = page.split("<td>budget-1</td>")[1].split("</tr>")[0]
    for term in ("funded", "additions", "unallocated", "outstanding", "paid", "refunds_reversals"):
        assert f"{term} {shown(budget[term])}" in row
    funding = parse_amount(budget["funded"]) + parse_amount(budget["additions"])
    assert f"<strong>{shown(str(funding))}</strong>" in row and row.count(shown(str(funding))) >= 2
    assert 'class="check-ok">yes<' in row
    assert "No budgets match." in finance[FINANCE].get("/ledger/budgets/", {"balanced": "no"}).content.decode()


def test_payables_per_recipient_add_up_their_payable_lines(finance, payouts_world):
    page = finance[FINANCE].get("/ledger/budgets/payables/").content.decode()
    for recipient in RECIPIENTS:
        owed = sum(int(payouts_world.state(f"allocation_line/{line_id}")["amount"])
                   for line_id in payouts_world.payable_line_ids(recipient))
        row = page.split(f"<td>{unnamed(recipient)}</td>")[1].split("</tr>")[0]
        assert row.startswith(f"<td>{shown(str(owed))}</td>")
