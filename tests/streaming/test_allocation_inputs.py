"""What streaming records feeds allocation: rights versions as heard, and a refund that stops the period."""

from __future__ import annotations

from ledger_engine.domain.schema import streaming as schema
from ledger_engine.selectors.money_queries import allocation_plan
from tests.money_allocation.oracle import london_1_lines, recorded_lines
from tests.streaming.conftest import ADMIN, DAY, INGEST, World
from tests.support import payloads
from tests.support.fixture_commands import fixture_commands
from tests.support.step_up import stepped_up

FINANCE, FINANCE_2 = "fin-1", "fin-2"
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
    plan = allocation_plan(world.owner.view(), "listener-1", day, "budget-1")
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


def allocated_day_one(world: World) -> list[str]:
    """Period-1 funded and day one allocated, with two finance actors; day one's payable artist lines."""
    fund_period(world)
    world.account(FINANCE_2, "staff", ["finance"])
    world.listen()
    world.next_day()
    assert world.close_day().accepted
    outcome, _ = allocate(world, DAY)
    assert outcome.accepted, outcome.result
    return [line_id for line_id in outcome.result["data"]["line_ids"]
            if world.state(f"allocation_line/{line_id}")["role"] == "artist"]


def refunded_after_a_day(world: World) -> list[str]:
    lines = allocated_day_one(world)
    assert world.billing("payment_refunded", period_id="period-1").accepted
    return lines


def approve(world: World, correction_id: str):
    request = world.state(f"correction_request/{correction_id}")
    world.now = max(world.now + 1_000, world.owner.admission_floor_ms())
    return world.owner.submit(stepped_up(world.envelopes("DecideCorrection", {
        "correction_id": correction_id, "request_hash": request["request_hash"], "action": "approve"},
        actor=FINANCE_2, admitted_at_ms=world.now)))


def test_a_correction_on_a_refunded_budget_sends_what_it_takes_back_out_as_a_refund(world: World):
    [line_id, *_] = refunded_after_a_day(world)
    amount = int(world.state(f"allocation_line/{line_id}")["amount"])
    request = {"correction_id": "fix-1", "budget_id": "budget-1", "reason": "allocation_error", "reverses": [line_id]}
    world.rejected("INVALID_STATE", "RequestCorrection", request, actor=FINANCE)
    world.rejected("INVALID_STATE", "RequestCorrection", {**request, "remainder_to": "unallocated"}, actor=FINANCE)

    refunded_before = int(world.state("budget/budget-1")["refunds_reversals"])
    world.ok("RequestCorrection", {**request, "remainder_to": "refund"}, actor=FINANCE)
    assert approve(world, "fix-1").accepted
    budget = world.state("budget/budget-1")
    assert (budget["unallocated"], int(budget["refunds_reversals"])) == ("0", refunded_before + amount)
    check = world.submit("CheckConservation", {"check_id": "check-1"}, actor=FINANCE)
    assert check.result["data"] == {"status": "clear", "mismatch_count": 0}


def test_a_correction_requested_before_the_refund_is_not_approved_into_the_refunded_budget(world: World):
    [line_id, *_] = allocated_day_one(world)
    world.ok("RequestCorrection", {"correction_id": "fix-1", "budget_id": "budget-1", "reason": "allocation_error",
                                   "reverses": [line_id]}, actor=FINANCE)
    assert world.billing("payment_refunded", period_id="period-1").accepted

    refused = approve(world, "fix-1")
    assert (refused.outcome, refused.code) == ("rejected", "INVALID_STATE"), refused.result
    assert world.state("budget/budget-1")["unallocated"] == "0"
    assert world.state("correction_request/fix-1")["status"] == "requested"  # to decline, and request again


def test_the_full_check_flags_units_stranded_in_a_refunded_budget(world: World):
    refunded_after_a_day(world)
    budget, refund = world.state("budget/budget-1"), world.state("budget_refund/budget-1")
    with fixture_commands():  # five units back in the budget, the refund's record and term five smaller
        world.ok("TestForgeRecord", {"record_key": "budget/budget-1", "changes": {
            "unallocated": "5", "refunds_reversals": str(int(budget["refunds_reversals"]) - 5)}}, actor=ADMIN)
        world.ok("TestForgeRecord", {"record_key": "budget_refund/budget-1", "changes": {
            "amount": str(int(refund["amount"]) - 5)}}, actor=ADMIN)
    check = world.submit("CheckConservation", {"check_id": "check-1"}, actor=FINANCE)
    assert check.result["data"] == {"status": "blocked", "mismatch_count": 1}
    assert [(m["subject"], m["check"]) for m in world.state("conservation")["mismatches"]] == [
        ("budget/budget-1", "unallocated")]
