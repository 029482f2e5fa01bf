"""AllocateListenerDay: london-1 to the minor unit, bound IDs, one allocation per day, bad input changes nothing."""

from __future__ import annotations

import pytest

from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.errors import LedgerError
from ledger_engine.layout import EVENTS, STATE
from tests.money_allocation.oracle import conservation_problems
from tests.money_allocation.world import BUDGET, DAY_ONE_LINES, DAY_ONE_WORKS, FIRST_DAY, LISTENER, MoneyWorld

# (role, recipient, work or node, amount), in canonical output order.
EXPECTED_LINES = [
    ("artist", "artist-a", "work-1", 45_000),
    ("artist", "artist-a", "work-2", 11_250),
    ("artist", "artist-b", "work-2", 11_250),
    ("artist", "artist-b", "work-3", 2_500),  # 2_499.75 rounds up: the larger remainder
    ("artist", "artist-c", "work-3", 5_000),  # 5_000.25
    ("operator", "operator-x", "node-1", 10_500),
    ("operator", "operator-y", "node-2", 4_500),
    ("porto", None, None, 10_000),
]


def test_day_one_splits_exactly_as_london_1(funded: MoneyWorld):
    funded.allocate_day_one()
    lines = [funded.state(f"allocation_line/{line_id}") for line_id in DAY_ONE_LINES]
    assert [(l["role"], l["recipient_id"], l.get("work_id") or l.get("node_id"), int(l["amount"])) for l in lines] \
        == EXPECTED_LINES
    assert [l["status"] for l in lines] == ["payable"] * 7 + ["paid"]
    assert all((l["listener_id"], l["day"], l["budget_id"]) == (LISTENER, FIRST_DAY, "budget-1") for l in lines)
    budget = funded.state("budget/budget-1")
    assert (budget["unallocated"], budget["outstanding"], budget["paid"]) == ("2900000", "90000", "10000")
    assert funded.owner.get("unique", f"allocation/{LISTENER}/{FIRST_DAY:020d}").data["line_ids"] == DAY_ONE_LINES
    assert conservation_problems(funded.owner) == []


def test_the_allocation_journal_follows_the_chart(funded: MoneyWorld):
    outcome = funded.allocate(LISTENER, FIRST_DAY, "budget-1")
    posted = [e for _, e in funded.owner.scan(EVENTS, f"{outcome.sequence:020d}/") if e["type"] == "Posted"]
    assert [(line["account"], line["side"], line["amount"]) for line in posted[0]["lines"]] == [
        ("budget_unallocated:budget-1", "debit", "100000"),
        ("artist_payable:artist-a", "credit", "56250"),
        ("artist_payable:artist-b", "credit", "13750"),
        ("artist_payable:artist-c", "credit", "5000"),
        ("operator_payable:operator-x", "credit", "10500"),
        ("operator_payable:operator-y", "credit", "4500"),
        ("porto_retained", "credit", "10000"),
    ]


def test_every_day_of_a_period_allocates_the_whole_budget(world: MoneyWorld):
    days, budget = 7, 1_000_003  # not divisible by 7: slices differ by one unit
    world.period("period-1", LISTENER, days=days)
    world.lot("lot-1", budget)
    world.fund("budget-1", "period-1", {"lot-1": budget})
    slices = []
    for day in range(FIRST_DAY, FIRST_DAY + days):
        world.closed_day(LISTENER, day, "period-1", {"work-3": 1_000})
        outcome = world.allocate(LISTENER, day, "budget-1")
        assert outcome.accepted, outcome.result
        slices.append(int(outcome.result["data"]["amount"]))
    assert sum(slices) == budget and max(slices) - min(slices) == 1
    assert world.state("budget/budget-1")["unallocated"] == "0"
    assert conservation_problems(world.owner) == []


def test_without_served_bytes_the_operator_pool_joins_the_rights_pool(funded: MoneyWorld):
    funded.closed_day(LISTENER, FIRST_DAY + 1, "period-1", {"work-1": 5})
    outcome = funded.allocate(LISTENER, FIRST_DAY + 1, "budget-1", line_ids=["a", "b"])
    assert outcome.accepted, outcome.result
    assert [(funded.state(f"allocation_line/{i}")["role"], funded.state(f"allocation_line/{i}")["amount"])
            for i in "ab"] == [("artist", "90000"), ("porto", "10000")]


def test_a_count_mismatch_is_rejected(funded: MoneyWorld):
    for count in (7, 9):
        funded.assert_rejected_without_change("COUNT_MISMATCH", lambda: funded.allocate(
            LISTENER, FIRST_DAY, "budget-1", line_ids=[f"x-{count}-{n}" for n in range(count)]))


def test_a_day_is_allocated_once(funded: MoneyWorld):
    assert funded.allocate(LISTENER, FIRST_DAY, "budget-1").accepted
    funded.assert_rejected_without_change("ALREADY_ALLOCATED", lambda: funded.allocate(LISTENER, FIRST_DAY, "budget-1"))


def test_expected_revisions_of_day_budget_and_policy_are_required_and_checked(funded: MoneyWorld):
    plan = funded.plan(LISTENER, FIRST_DAY, "budget-1")
    stated = plan.expected_revisions()
    for missing in range(len(stated)):
        partial = stated[:missing] + stated[missing + 1:]
        funded.assert_rejected_without_change("STALE_REVISION", lambda: funded.allocate(
            LISTENER, FIRST_DAY, "budget-1", expected=partial))
    stale = [{**item, "revision": item["revision"] + 1} if item["key"].startswith("budget/") else item
             for item in stated]
    funded.assert_rejected_without_change("STALE_REVISION", lambda: funded.allocate(
        LISTENER, FIRST_DAY, "budget-1", expected=stale))


def test_only_a_closed_hold_free_day_of_the_budgets_period_inside_it_is_allocated(funded: MoneyWorld):
    funded.period("period-2", "listener-2", days=30)
    funded.fund("budget-2", "period-2", {"lot-1": 30})
    cases = [
        (dict(status="open"), "INVALID_STATE"),
        (dict(hold_free=False), "HOLDS_OPEN"),
    ]
    for day_offset, (fields, code) in enumerate(cases, start=1):
        funded.closed_day(LISTENER, FIRST_DAY + day_offset, "period-1", DAY_ONE_WORKS, **fields)
        funded.assert_rejected_without_change(code, lambda: funded.submit(
            "AllocateListenerDay", {"listener_id": LISTENER, "day": FIRST_DAY + day_offset, "budget_id": "budget-1",
                                    "line_ids": ["z-1"]}, actor="fin-1"))
    funded.closed_day(LISTENER, FIRST_DAY + 30, "period-1", DAY_ONE_WORKS)
    funded.closed_day(LISTENER, FIRST_DAY + 3, "period-2", DAY_ONE_WORKS)
    for day, budget, code in ((FIRST_DAY + 30, "budget-1", "INVALID_TIME"), (FIRST_DAY + 3, "budget-1", "INVALID_REFERENCE"),
                              (FIRST_DAY + 9, "budget-1", "NOT_FOUND"), (FIRST_DAY, "budget-9", "NOT_FOUND")):
        funded.assert_rejected_without_change(code, lambda: funded.submit(
            "AllocateListenerDay", {"listener_id": LISTENER, "day": day, "budget_id": budget, "line_ids": ["z-1"]},
            actor="fin-1"))


def test_line_ids_are_never_reused(funded: MoneyWorld):
    funded.closed_day(LISTENER, FIRST_DAY + 1, "period-1", {"work-1": 5})
    assert funded.allocate(LISTENER, FIRST_DAY + 1, "budget-1", line_ids=["a", "b"]).accepted
    taken = ["a"] + [f"new-{n}" for n in range(7)]
    funded.assert_rejected_without_change("ALREADY_EXISTS", lambda: funded.allocate(
        LISTENER, FIRST_DAY, "budget-1", line_ids=taken))


def test_only_finance_allocates_and_payload_is_closed(funded: MoneyWorld):
    funded.assert_rejected_without_change("CAPABILITY_MISSING", lambda: funded.allocate(
        LISTENER, FIRST_DAY, "budget-1", actor="ingest-1"))
    for payload in ({"listener_id": LISTENER, "day": FIRST_DAY, "budget_id": "budget-1", "line_ids": ["a", "a"]},
                    {"listener_id": LISTENER, "day": FIRST_DAY, "budget_id": "budget-1", "line_ids": []},
                    {"listener_id": LISTENER, "day": FIRST_DAY, "budget_id": "budget-1", "line_ids": ["a"], "x": 1}):
        with pytest.raises(LedgerError) as raised:
            funded.submit("AllocateListenerDay", payload, actor="fin-1")
        assert raised.value.code in ("INVALID_PAYLOAD", "UNKNOWN_FIELD")


def test_a_budget_short_of_the_days_slice_is_rejected(funded: MoneyWorld):
    refund = {"refund_unallocated": str(BUDGET - 50_000), "reason": "subscription_refund"}
    assert funded.correct("refund-1", "budget-1", **refund).accepted
    funded.assert_rejected_without_change("INSUFFICIENT_FUNDS", lambda: funded.allocate(LISTENER, FIRST_DAY, "budget-1"))


def test_slices_follow_each_funding_version_and_never_exceed_the_budget(world: MoneyWorld):
    world.period("period-1", LISTENER, days=3)
    world.lot("lot-1", 1_000)
    world.fund("budget-1", "period-1", {"lot-1": 10})  # slices 3, 3, 4
    world.closed_day(LISTENER, FIRST_DAY, "period-1", {"work-1": 1})
    assert world.allocate(LISTENER, FIRST_DAY, "budget-1").result["data"]["amount"] == "3"
    assert world.fund("budget-1", "period-1", {"lot-1": 5}, version=2, actor="fin-1").accepted  # slices 1, 2, 2
    amounts = []
    for day in (FIRST_DAY + 1, FIRST_DAY + 2):
        world.closed_day(LISTENER, day, "period-1", {"work-1": 1})
        amounts.append(world.allocate(LISTENER, day, "budget-1").result["data"]["amount"])
    assert amounts == ["5", "6"]
    assert world.state("budget/budget-1")["unallocated"] == "1"  # day 1's share of the addition
    assert conservation_problems(world.owner) == []


def test_period_days_map_from_utc_day_numbers(world: MoneyWorld):
    world.period("period-1", LISTENER, days=2, first_day=FIRST_DAY + 10)
    world.lot("lot-1", 100)
    world.fund("budget-1", "period-1", {"lot-1": 100})
    budget = world.state("budget/budget-1")
    assert (budget["first_day"], budget["days"]) == (FIRST_DAY + 10, 2)
    assert world.state("period/period-1")["start_ms"] == (FIRST_DAY + 10) * DAY_MS
    world.closed_day(LISTENER, FIRST_DAY + 11, "period-1", {"work-1": 1})
    assert world.allocate(LISTENER, FIRST_DAY + 11, "budget-1").result["data"]["amount"] == "50"
    assert world.owner.get(STATE, "budget/budget-1").data["unallocated"] == "50"
