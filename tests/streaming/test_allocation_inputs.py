"""What streaming records feeds allocation: rights versions as heard, and a refund that stops the period."""

from __future__ import annotations

from ledger_engine.domain.schema import streaming as schema
from ledger_engine.projections.money_queries import allocation_plan
from tests.money_allocation.oracle import london_1_lines, recorded_lines
from tests.streaming.conftest import DAY, INGEST, World
from tests.support import payloads

FINANCE = "fin-1"
BUDGET = 3_000_000


def fund_period(world: World) -> None:
    """Period-1's payment clears and a deposit funds its budget."""
    world.account(FINANCE, "staff", ["finance"])
    assert world.billing("payment_cleared", period_id="period-1").accepted
    payload = {**payloads.funding("lot-1", str(BUDGET)), "budgets": [{
        "budget_id": "budget-1", "period_id": "period-1", "version": 1,
        "draws": [{"lot_id": "lot-1", "amount": str(BUDGET)}]}]}
    world.ok("ImportFunding", payload, actor=INGEST, evidence=[payloads.deposit_evidence(payload)])


def allocate(world: World, day: int):
    plan = allocation_plan(world.owner.store, "listener-1", day, "budget-1")
    return world.submit("AllocateListenerDay", {
        "listener_id": "listener-1", "day": day, "budget_id": "budget-1",
        "line_ids": [f"line-{day}-{n}" for n in range(len(plan.lines))]},
        actor=FINANCE, expected=plan.expected_revisions()), plan


def test_a_rights_change_during_a_day_allocates_both_versions(world: World):
    """Attack 4 through the streaming rules: sessions before and after ActivateWork v2 on one day."""
    fund_period(world)
    world.account("artist-2", "artist", payout_address=payloads.address("artist-2"))
    world.listen()
    world.ok("ActivateWork", payloads.rights("work-1", {"artist-2": 10_000}, version=2), actor=INGEST)
    world.listen()
    world.next_day()
    assert world.close_day().accepted
    closed = world.state(schema.listener_day_key("listener-1", DAY))
    assert [(w["work_id"], w["rights_version"]) for w in closed["works"]] == [("work-1", 1), ("work-1", 2)]

    outcome, plan = allocate(world, DAY)
    assert outcome.accepted, outcome.result
    splits = {1: {"artist-1": 10_000}, 2: {"artist-2": 10_000}}
    works = [{**w, "splits": splits[w["rights_version"]]} for w in closed["works"]]
    assert recorded_lines(world.owner, outcome.result["data"]["line_ids"]) == \
        london_1_lines(plan.slice_amount, works, closed["nodes"])
    assert {line[1] for line in recorded_lines(world.owner, outcome.result["data"]["line_ids"])} >= {
        "artist-1", "artist-2"}


def test_a_refunded_period_allocates_nothing_more_and_its_budget_is_refunded(world: World):
    """Attack 5: after the provider refunds the period, no later day allocates; the rest leaves the budget."""
    fund_period(world)
    world.listen()
    world.next_day()
    assert world.close_day().accepted
    outcome, _ = allocate(world, DAY)
    assert outcome.accepted, outcome.result
    world.health("node-1")
    world.listen()  # day two is heard before the refund arrives
    unallocated = int(world.state("budget/budget-1")["unallocated"])

    refund = world.billing("payment_refunded", period_id="period-1")
    assert refund.accepted, refund.result
    budget = world.state("budget/budget-1")
    assert (budget["unallocated"], int(budget["refunds_reversals"])) == ("0", unallocated)
    assert world.state("budget_refund/budget-1")["amount"] == str(unallocated)
    posted = [e for _, e in world.owner.scan("events", f"{refund.sequence:020d}/") if e["type"] == "Posted"]
    assert [(p["journal"], p["asset"], [(l["account"], l["side"], l["amount"]) for l in p["lines"]])
            for p in posted if p["asset"] == "USDC"] == [
        ("refund:budget-1", "USDC", [("budget_unallocated:budget-1", "debit", str(unallocated)),
                                     ("subscription_refunds", "credit", str(unallocated))])]

    world.next_day()
    assert world.close_day(day=DAY + 1).accepted
    plan_refused = world.submit("AllocateListenerDay", {"listener_id": "listener-1", "day": DAY + 1,
                                                        "budget_id": "budget-1", "line_ids": ["x-1"]}, actor=FINANCE)
    assert plan_refused.code == "INVALID_STATE", plan_refused.result
    assert world.owner.get("unique", f"allocation/listener-1/{DAY + 1:020d}") is None
    check = world.submit("CheckConservation", {"check_id": "check-1"}, actor=FINANCE)
    assert check.result["data"] == {"status": "clear", "mismatch_count": 0}
