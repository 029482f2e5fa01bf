"""From streams to payable lines with the real streaming commands: listen, close the day, fund, allocate."""

from __future__ import annotations

from ledger_engine.selectors.money_queries import allocation_plan, payables
from tests.money_allocation.oracle import conservation_problems
from tests.money_allocation.world import funding
from tests.streaming.conftest import DAY, INGEST, bare_world, world  # noqa: F401  (the streaming test world)
from tests.support import payloads

BUDGET = 30_000_000  # one USDC a day for the 30-day period


def test_a_closed_listener_day_is_allocated_to_its_artist_operator_and_porto(world):  # noqa: F811
    world.account("fin-1", "staff", ["finance"])
    world.listen(chunks=3)
    world.next_day()
    assert world.close_day().accepted
    assert world.billing("payment_cleared", period_id="period-1").accepted
    lot = {**payloads.funding("lot-1", str(BUDGET)), "budgets": [funding("budget-1", "period-1", {"lot-1": BUDGET})]}
    world.ok("ImportFunding", lot, actor=INGEST, evidence=[payloads.deposit_evidence(lot)])

    plan = allocation_plan(world.owner.view(), "listener-1", DAY, "budget-1")
    line_ids = [f"line-{n}" for n in range(len(plan.lines))]
    outcome = world.submit("AllocateListenerDay", {"listener_id": "listener-1", "day": DAY, "budget_id": "budget-1",
                                                   "line_ids": line_ids},
                           actor="fin-1", expected=plan.expected_revisions())
    assert outcome.accepted, outcome.result
    lines = [world.state(f"allocation_line/{line_id}") for line_id in line_ids]
    assert [(l["role"], l["recipient_id"], l["amount"]) for l in lines] == [
        ("artist", "artist-1", "750000"), ("operator", "operator-1", "150000"), ("porto", None, "100000")]
    assert lines[1]["node_id"] == "node-1" and lines[0]["work_id"] == "work-1"
    assert payables(world.owner.view(), "operator-1")["total"] == "150000"
    assert world.submit("CheckConservation", {"check_id": "check-1"}, actor="fin-1").result["data"]["status"] == "clear"
    assert conservation_problems(world.owner) == []
