"""Day lines on the console (docs/adr/0073, step 1): each screen that shows or counts allocation lines shows a day
line's day and artifact where an ordinary line has a budget, and none of them fails on a line without one.

The payout tests' world, with listener-1's third day frozen by the test-only ``TestDayLines``
(tests/support/fixture_commands.py): nothing in the product writes a day line yet.
"""

from __future__ import annotations

import pytest

from porto_console.console.handles import seal
from tests.money_allocation.test_day_lines import ARTIST_A, CHUNK_HASH, DAY, OPERATOR_X, freeze
from tests.money_allocation.world import FINANCE

PAGES = ("/ledger/", "/ledger/payouts/", "/ledger/payouts/?status=all", "/ledger/payouts/prepare/",
         "/ledger/payouts/payments/", "/ledger/budgets/", "/ledger/budgets/payables/",
         "/ledger/accounting/trial-balance/")


@pytest.fixture
def frozen(payouts_world):
    freeze(payouts_world.money)
    return payouts_world


def paid_run(world, run_id: str = "run-9") -> str:
    """A run paying artist-a its day line, approved on a statement frozen after it, and confirmed."""
    statements = world.confirmed_statements(["artist-a"])
    assert world.prepare(run_id, {"artist-a": [ARTIST_A]}).accepted
    assert world.approve(run_id, statements).accepted
    world.pay(f"{run_id}.artist-a", "attempt-9")
    return run_id


def test_preparation_lists_each_recipients_day_lines_with_their_day_and_artifact(finance, frozen):
    page = finance[FINANCE].get("/ledger/payouts/prepare/").content.decode()
    row = page.split("<td>artist-a</td>")[1].split("</tr>")[0]
    assert "of which 1 day line:" in row and f"chunk 0, artifact <code title=\"{CHUNK_HASH}\">" in row
    assert f'title="day {DAY}"' in row
    ordinary = page.split("<td>artist-c</td>")[1].split("</tr>")[0]  # allocated by AllocateListenerDay only
    assert "day line" not in ordinary


def test_a_run_shows_its_day_lines_day_and_artifact_and_its_other_lines_budget(finance, frozen):
    statements = frozen.confirmed_statements(["operator-x"])
    lines = frozen.payable_line_ids("operator-x")
    assert OPERATOR_X in lines and len(lines) > 1
    assert frozen.prepare("run-9", {"operator-x": lines}).accepted
    assert frozen.approve("run-9", statements).accepted
    page = finance[FINANCE].get(f"/ledger/payouts/{seal('run', 'run-9')}/").content.decode()
    assert page.count('<span class="day-line">day line of') == 1
    assert CHUNK_HASH[:12] in page and f'title="day {DAY}"' in page
    assert page.count("budget budget-1") == len(lines) - 1
    assert "budget None" not in page and "None" not in page.split('id="payments"')[1]


def test_every_screen_that_counts_lines_answers_with_a_day_line_paid(finance, frozen):
    run_id = paid_run(frozen)
    for path in (*PAGES, f"/ledger/payouts/{seal('run', run_id)}/",
                 f"/ledger/accounting/history/run/{seal('run', run_id)}/"):
        response = finance[FINANCE].get(path)
        assert response.status_code == 200, path
    payables = finance[FINANCE].get("/ledger/budgets/payables/").content.decode()
    assert "<td>artist-a</td>" in payables


def test_the_budget_shows_its_frozen_term_on_the_holding_side(finance, frozen):
    budget = frozen.state("budget/budget-1")
    page = finance[FINANCE].get("/ledger/budgets/").content.decode()
    row = page.split("<td>budget-1</td>")[1].split("</tr>")[0]
    assert budget["frozen"] == "100000" and "frozen <span" in row and 'title="100000 minor units"' in row
    holding = sum(int(budget[term]) for term in ("unallocated", "outstanding", "paid", "refunds_reversals", "frozen"))
    assert f'<strong><span class="money" title="{holding} minor units">' in row
    assert 'class="check-ok">yes<' in row


def test_a_budget_no_freeze_touched_shows_no_frozen_term(finance, payouts_world):
    assert "frozen" not in payouts_world.state("budget/budget-1")
    row = finance[FINANCE].get("/ledger/budgets/").content.decode().split("<td>budget-1</td>")[1].split("</tr>")[0]
    assert "frozen" not in row and "unallocated <span" in row
