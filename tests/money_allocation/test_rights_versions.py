"""Allocation splits listening by (work, rights version), as it is recorded, and matches the design oracle."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger_engine.domain.allocation_policy import Listening, Policy, Serving, split_listener_day
from tests.money_allocation.oracle import conservation_problems, london_1_lines, recorded_lines
from tests.money_allocation.world import FIRST_DAY, LISTENER, RIGHTS, MoneyWorld
from tests.support import payloads
from tests.support.tiers import examples

LONDON_1 = Policy(operator_pool_bps=1500, porto_retained_bps=1000)
WORK_1_V2 = {"artist-b": 2_500, "artist-c": 7_500}  # work-1's corrected rights: artist-a no longer holds it


def activate_second_version(world: MoneyWorld) -> None:
    world.submit_ok("ActivateWork", payloads.rights("work-1", WORK_1_V2, version=2), actor="ingest-1")


def test_a_day_heard_under_two_rights_versions_allocates_both(funded: MoneyWorld):
    """Attack 4: the rights of work-1 changed during the day; both versions' recipients are paid their part."""
    activate_second_version(funded)
    day = FIRST_DAY + 1
    heard = {("work-1", 1): 40_000, ("work-1", 2): 40_000, ("work-3", 1): 20_000}
    funded.closed_day_heard(LISTENER, day, "period-1", heard, {"node-1": ("operator-x", 10)})
    plan = funded.plan(LISTENER, day, "budget-1")
    outcome = funded.allocate(LISTENER, day, "budget-1")
    assert outcome.accepted, outcome.result

    line_ids = outcome.result["data"]["line_ids"]
    works = [{"work_id": w, "rights_version": v, "listened_ms": ms,
              "splits": RIGHTS[w] if v == 1 else WORK_1_V2} for (w, v), ms in sorted(heard.items())]
    expected = london_1_lines(plan.slice_amount, works, [{"node_id": "node-1", "operator_id": "operator-x",
                                                          "served_bytes": 10}])
    assert recorded_lines(funded.owner, line_ids) == expected
    by_version = {(line[2], line[3]) for line in expected if line[0] == "artist"}
    assert {("work-1", 1), ("work-1", 2)} <= by_version
    assert [line[1] for line in expected if line[2:4] == ("work-1", 1)] == ["artist-a"]
    assert [line[1] for line in expected if line[2:4] == ("work-1", 2)] == ["artist-b", "artist-c"]
    assert funded.owner.get("unique", f"allocation/{LISTENER}/{day:020d}") is not None
    assert conservation_problems(funded.owner) == []


def test_day_one_matches_the_design_oracle(allocated: MoneyWorld):
    works = [{"work_id": w, "rights_version": 1, "listened_ms": ms, "splits": RIGHTS[w]}
             for w, ms in sorted({"work-1": 60_000, "work-2": 30_000, "work-3": 10_000}.items())]
    nodes = [{"node_id": "node-1", "operator_id": "operator-x", "served_bytes": 700},
             {"node_id": "node-2", "operator_id": "operator-y", "served_bytes": 300}]
    assert recorded_lines(allocated.owner, [f"l-{n}" for n in range(8)]) == london_1_lines(100_000, works, nodes)


recipients = st.sampled_from(["r-a", "r-b", "r-c", "r-d"])


@st.composite
def rights_version(draw) -> dict[str, int]:
    chosen = sorted(draw(st.sets(recipients, min_size=1, max_size=4)))
    cuts = sorted(draw(st.lists(st.integers(1, 9_999), min_size=len(chosen) - 1, max_size=len(chosen) - 1,
                                unique=True)))
    bounds = [0, *cuts, 10_000]
    return {recipient: bounds[n + 1] - bounds[n] for n, recipient in enumerate(chosen)}


heard_works = st.dictionaries(
    st.tuples(st.sampled_from(["w-1", "w-2", "w-10", "w-2.x"]), st.integers(1, 3)),
    st.tuples(st.integers(0, 10**7), rights_version()), min_size=1, max_size=6,
).filter(lambda heard: sum(ms for ms, _ in heard.values()) > 0)
served_nodes = st.dictionaries(st.sampled_from(["n-1", "n-2", "n-10"]),
                               st.tuples(st.sampled_from(["op-x", "op-y"]), st.integers(0, 10**9)), max_size=3)


@settings(max_examples=examples(300), deadline=None)
@given(slice_amount=st.integers(0, 10**13), heard=heard_works, served=served_nodes)
def test_the_policy_matches_the_design_oracle_line_for_line(slice_amount, heard, served):
    listening = [Listening(w, v, ms, tuple(sorted(splits.items()))) for (w, v), (ms, splits) in heard.items()]
    serving = [Serving(node, operator, size) for node, (operator, size) in served.items()]
    lines = split_listener_day(slice_amount, listening, serving, LONDON_1)
    works = [{"work_id": w, "rights_version": v, "listened_ms": ms, "splits": splits}
             for (w, v), (ms, splits) in heard.items()]
    nodes = [{"node_id": node, "operator_id": operator, "served_bytes": size} for node, (operator, size) in served.items()]
    assert [(l.role, l.recipient_id, l.work_id, l.rights_version, l.node_id, l.amount) for l in lines] == \
        london_1_lines(slice_amount, works, nodes)
