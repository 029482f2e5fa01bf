"""The day allocator: a day's listener-days split outside the executor, exactly as the rule and the oracle split them.

The world has twelve listeners on day one: four allocatable, and eight that
``AllocateListenerDay`` refuses: already allocated, still open, with undecided
holds, refunded after funding, with no budget, with no eligible listening,
short of the day's slice, and allocated then refunded. Every listener-day
the allocator leaves out must be one ``AllocateListenerDay`` refuses, with the
same code; every one it splits must match the rule's plan, the independent
oracle, and in the end what the rule writes when each day is allocated one by one.
"""

from __future__ import annotations

import hashlib
import os
import signal
import threading
import time
from collections import defaultdict
from concurrent.futures.process import BrokenProcessPool

import orjson
import pytest
import rfc8785

from ledger_engine.application import day_allocator
from ledger_engine.application.day_allocator import WORKER_NICENESS, DayAllocator, Skipped, day_candidates
from ledger_engine.application.pending import PendingBatch
from ledger_engine.domain.changes import Rejected
from ledger_engine.domain.commands.money.allocation import POLICY_KEY, plan_listener_day, planned_fields
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.domain.schema.money_allocation import budget_key, line_key
from ledger_engine.domain.schema.streaming import listener_day_key, rights_key
from ledger_engine.errors import LedgerError
from ledger_engine.layout import STATE
from tests.money_allocation.oracle import london_1_lines, oracle_shape
from tests.money_allocation.world import FINANCE, FIRST_DAY, INGEST, NODES, RIGHTS, MoneyWorld, funding

ALLOCATABLE = {
    "listener-a": ({"work-1": 40_000, "work-3": 9_000}, {"node-1": 900, "node-2": 100}),
    "listener-b": ({"work-2": 1}, {}),
    "listener-c": ({"work-1": 7, "work-2": 11, "work-3": 13}, {"node-3": 5}),
    "listener-d": ({"work-3": 60_000}, {"node-2": 1}),
}
REFUSED = {
    "listener-done": "ALREADY_ALLOCATED",
    "listener-open": "INVALID_STATE",
    "listener-held": "HOLDS_OPEN",
    "listener-refunded": "INVALID_STATE",
    "listener-unfunded": "NOT_FOUND",
    "listener-silent": "INVALID_STATE",  # closed with no eligible listening: the split itself refuses it
    "listener-drained": "INSUFFICIENT_FUNDS",  # a correction refunded all but 50,000 of the budget
    "listener-done-refunded": "INVALID_STATE",  # allocated, then refunded: the plan refuses before the sentinel
}
BUDGETS = {listener: 3_000_000 + 7_919 * number for number, listener in enumerate([*ALLOCATABLE, *REFUSED])}


def _nodes(served: dict[str, int]) -> dict[str, tuple[str, int]]:
    return {node_id: (NODES[node_id], served_bytes) for node_id, served_bytes in served.items()}


@pytest.fixture
def day_one(world: MoneyWorld) -> MoneyWorld:
    assert world.lot("lot-1", sum(BUDGETS.values())).accepted
    for listener, budget in BUDGETS.items():
        world.period(f"period-{listener}", listener, days=30)
        if listener != "listener-unfunded":
            assert world.fund(f"budget-{listener}", f"period-{listener}", {"lot-1": budget}).accepted
        works, served = ALLOCATABLE.get(listener, ({} if listener == "listener-silent" else {"work-1": 1_000},
                                                   {"node-1": 10}))
        fields = {"listener-open": {"status": "open"}, "listener-held": {"hold_free": False}}.get(listener, {})
        world.closed_day(listener, FIRST_DAY, f"period-{listener}", works, _nodes(served), **fields)
    for listener in ("listener-done", "listener-done-refunded"):
        assert world.allocate(listener, FIRST_DAY, f"budget-{listener}").accepted
    for listener in ("listener-refunded", "listener-done-refunded"):
        world.period(f"period-{listener}", listener, days=30, clearance="refunded")
    drained = {"refund_unallocated": str(BUDGETS["listener-drained"] - 50_000), "reason": "subscription_refund"}
    assert world.correct("drain-1", "budget-listener-drained", **drained).accepted
    return world


def _build(world: MoneyWorld, **options):
    with DayAllocator(**options) as allocator:
        return allocator.build(PendingBatch(world.owner.store), FIRST_DAY)


def _artifact_lines(artifact) -> list[dict]:
    return [orjson.loads(line) for line in artifact.content.splitlines()]


def test_every_allocatable_listener_day_is_split_as_the_rule_plans_it_and_as_the_oracle_does(day_one):
    artifact = _build(day_one, workers=1)

    lines = _artifact_lines(artifact)
    assert [line["listener_id"] for line in lines] == sorted(ALLOCATABLE)
    for line in lines:
        listener, budget_id = line["listener_id"], f"budget-{line['listener_id']}"
        plan = plan_listener_day(PendingBatch(day_one.owner.store), listener, FIRST_DAY, budget_id)
        assert (line["day"], line["budget_id"], line["amount"]) == (FIRST_DAY, budget_id, str(plan.slice_amount))
        # Its budget is named by the slice alone: a freeze of another day moves the budget's revision.
        assert line["revisions"] == {name: revision for name, revision in plan.revisions.items()
                                     if name != f"budget/{budget_id}"}
        assert line["lines"] == [planned_fields(planned) for planned in plan.lines]
        works, served = ALLOCATABLE[listener]
        oracle = london_1_lines(plan.slice_amount,
                                [{"work_id": w, "rights_version": 1, "listened_ms": ms, "splits": RIGHTS[w]}
                                 for w, ms in works.items()],
                                [{"node_id": n, "operator_id": NODES[n], "served_bytes": b} for n, b in served.items()])
        assert [oracle_shape(fields) for fields in line["lines"]] == oracle


def test_a_listener_day_left_out_is_one_the_rule_refuses_with_the_same_code(day_one):
    artifact = _build(day_one, workers=1)

    assert {skipped.listener_id: skipped.code for skipped in artifact.skipped} == REFUSED
    for listener, code in REFUSED.items():
        if listener != "listener-unfunded":  # no budget to name; the rule says NOT_FOUND for a missing budget too
            budget_id = f"budget-{listener}"
            current = [{"cf": STATE, "key": key, "revision": day_one.owner.get(STATE, key).revision}
                       for key in sorted((listener_day_key(listener, FIRST_DAY), budget_key(budget_id), POLICY_KEY))]
            refused = day_one.submit("AllocateListenerDay", {
                "listener_id": listener, "day": FIRST_DAY, "budget_id": budget_id,
                "line_ids": day_one.new_line_ids(_planned_count(day_one, listener, budget_id))},
                actor=FINANCE, expected=current)
            assert (refused.outcome, refused.code) == ("rejected", code), (listener, refused.result)


def _planned_count(world: MoneyWorld, listener: str, budget_id: str) -> int:
    """The plan's line count where there is a plan, so the rule gets past its count check to the real refusal."""
    try:
        return len(world.plan(listener, FIRST_DAY, budget_id).lines)
    except (Rejected, LedgerError):
        return 1


def test_the_artifact_does_not_depend_on_the_workers_or_the_chunk_size(day_one):
    alone = _build(day_one, workers=1, chunk_size=1_000)
    shared_out = _build(day_one, workers=2, chunk_size=1)

    assert shared_out.content == alone.content and shared_out.digest == alone.digest
    assert shared_out.skipped == alone.skipped
    assert (dict(shared_out.totals.by_recipient), dict(shared_out.totals.by_budget)) == (
        dict(alone.totals.by_recipient), dict(alone.totals.by_budget))


def test_each_line_is_rfc8785_and_the_digest_is_the_sha256_of_the_bytes(day_one):
    artifact = _build(day_one, workers=1)

    assert artifact.content.endswith(b"\n")
    for line in artifact.content.splitlines():
        assert rfc8785.dumps(orjson.loads(line)) == line
    assert artifact.digest == hashlib.sha256(artifact.content).hexdigest()


def test_the_totals_are_what_the_rule_writes_when_each_day_is_allocated_alone(day_one):
    artifact = _build(day_one, workers=2, chunk_size=2)
    assert artifact.totals.listener_days == len(ALLOCATABLE)

    written: dict[tuple, int] = defaultdict(int)
    by_budget: dict[str, int] = defaultdict(int)
    for listener in ALLOCATABLE:
        outcome = day_one.allocate(listener, FIRST_DAY, f"budget-{listener}")
        assert outcome.accepted, outcome.result
        by_budget[f"budget-{listener}"] += int(outcome.result["data"]["amount"])
        for line_id in outcome.result["data"]["line_ids"]:
            line = day_one.owner.get(STATE, line_key(line_id)).data
            written[(line["role"], line["recipient_id"])] += int(line["amount"])
    assert dict(artifact.totals.by_recipient) == dict(written)
    assert dict(artifact.totals.by_budget) == dict(by_budget)
    assert artifact.totals.amount == sum(by_budget.values())


def test_once_every_day_is_allocated_the_next_build_is_empty(day_one):
    for listener in ALLOCATABLE:
        assert day_one.allocate(listener, FIRST_DAY, f"budget-{listener}").accepted

    artifact = _build(day_one, workers=1)

    assert artifact.content == b"" and artifact.totals.listener_days == 0
    assert {skipped.listener_id for skipped in artifact.skipped if skipped.code == "ALREADY_ALLOCATED"} == {
        "listener-done", *ALLOCATABLE}


def test_the_parent_reads_each_listener_day_and_its_budget_and_shares_rights_and_policy(day_one):
    shared = {}
    candidates = list(day_candidates(PendingBatch(day_one.owner.store), FIRST_DAY, shared))

    assert len(candidates) == len(ALLOCATABLE) + len(REFUSED)
    assert {key.split("/")[0] for _, key in shared} == {"ruleset", "rights"}


def test_the_parent_builds_each_rights_versions_key_once_a_day(day_one, monkeypatch):
    built = []

    def counted(work_id: str, version: int) -> str:
        built.append((work_id, version))
        return rights_key(work_id, version)

    monkeypatch.setattr(day_allocator, "rights_key", counted)
    shared = {}
    candidates = list(day_candidates(PendingBatch(day_one.owner.store), FIRST_DAY, shared))

    named = [address for candidate in candidates if not isinstance(candidate, Skipped)
             for address in candidate.shared if address[1].startswith("rights/")]
    assert len(named) > len(set(named))  # the day's listener-days share rights versions
    assert sorted(built) == sorted(set(built)) and len(built) == len(set(named))
    assert {address: shared[address] for address in set(named)} == {
        (STATE, rights_key(*version)): day_one.owner.store.get(STATE, rights_key(*version).encode())
        for version in built}


def test_listener_days_come_in_record_key_order_not_index_order(world: MoneyWorld):
    """``day_closed/<day>/x`` sorts before ``.../x-1``, but ``listener_day/x-1/...`` before ``listener_day/x/...``."""
    assert world.lot("lot-1", 2 * 3_000_000).accepted
    for listener in ("x", "x-1"):
        world.period(f"period-{listener}", listener, days=30)
        assert world.fund(f"budget-{listener}", f"period-{listener}", {"lot-1": 3_000_000}).accepted
        world.closed_day(listener, FIRST_DAY, f"period-{listener}", {"work-1": 100})

    artifact = _build(world, workers=1)

    assert [line["listener_id"] for line in _artifact_lines(artifact)] == ["x-1", "x"]


def _many_listeners(world: MoneyWorld, count: int) -> list[str]:
    """``count`` funded listeners with a closed first day each, recorded in three commands."""
    listeners = [f"listener-{number:04d}" for number in range(count)]
    assert world.lot("lot-1", len(listeners) * 3_000_000).accepted
    world.submit_ok("TestStreamingRecords", {"periods": [{
        "period_id": f"period-{listener}", "account_id": listener, "start_ms": FIRST_DAY * DAY_MS,
        "end_ms": (FIRST_DAY + 30) * DAY_MS, "days": 30} for listener in listeners]})
    world.submit_ok("ImportFunding", {"budgets": [funding(f"budget-{listener}", f"period-{listener}", {"lot-1": 3_000_000})
                                                  for listener in listeners]}, actor=INGEST)
    world.submit_ok("TestStreamingRecords", {"days": [{
        "listener_id": listener, "day": FIRST_DAY, "period_id": f"period-{listener}",
        "works": [{"work_id": work_id, "rights_version": 1, "listened_ms": 1_000 + number}
                  for number, work_id in enumerate(RIGHTS)]} for listener in listeners]})
    return listeners


def _kill_a_worker_of_each_new_pool(allocator: DayAllocator, pools: int) -> tuple[threading.Thread, list[int]]:
    """A thread that SIGKILLs one worker of each of the next ``pools`` pools the allocator starts, as soon as it has one."""
    killed: list[int] = []

    def kill() -> None:
        seen = None
        while len(killed) < pools:
            pool = allocator._pool
            if pool is not None and pool is not seen and pool._processes:
                seen = pool
                killed.append(next(iter(pool._processes)))
                os.kill(killed[-1], signal.SIGKILL)
            time.sleep(0.001)

    killer = threading.Thread(target=kill, daemon=True)
    killer.start()
    return killer, killed


def test_a_build_outlives_a_worker_killed_mid_build_and_fails_whole_on_a_second(world: MoneyWorld):
    listeners = _many_listeners(world, 400)
    reference = _build(world, workers=1)

    with DayAllocator(workers=2, chunk_size=1) as allocator:
        killer, killed = _kill_a_worker_of_each_new_pool(allocator, pools=1)
        survived = allocator.build(PendingBatch(world.owner.store), FIRST_DAY)
        killer.join(timeout=10)
        assert len(killed) == 1

    with DayAllocator(workers=2, chunk_size=1) as allocator:
        killer, killed = _kill_a_worker_of_each_new_pool(allocator, pools=2)
        with pytest.raises(BrokenProcessPool):
            allocator.build(PendingBatch(world.owner.store), FIRST_DAY)
        killer.join(timeout=10)
        assert len(killed) == 2 and allocator._pool is None

        again = allocator.build(PendingBatch(world.owner.store), FIRST_DAY)

    assert survived.totals.listener_days == again.totals.listener_days == len(listeners)
    assert survived.digest == again.digest == reference.digest


def test_a_worker_that_died_while_the_allocator_was_idle_does_not_fail_the_next_build(world: MoneyWorld):
    """Killed just before the build, so the pool may not know of it yet: the build meets the death, or finishes
    on the survivor, and either way gives the same artifact."""
    listeners = _many_listeners(world, 40)
    reference = _build(world, workers=1)
    killed: set[int] = set()
    with DayAllocator(workers=2, chunk_size=4) as allocator:
        built = [allocator.build(PendingBatch(world.owner.store), FIRST_DAY)]
        for _ in range(5):
            # The survivor may finish a build before the pool notices the death, so the pool can still list a
            # worker killed before: kill one that was not.
            victim = next(pid for pid in allocator._pool._processes if pid not in killed)
            os.kill(victim, signal.SIGKILL)
            killed.add(victim)
            built.append(allocator.build(PendingBatch(world.owner.store), FIRST_DAY))

    assert {artifact.digest for artifact in built} == {reference.digest}
    assert built[-1].totals.listener_days == len(listeners)


def test_the_parent_keeps_at_most_two_chunks_per_worker_waiting(world: MoneyWorld):
    _many_listeners(world, 60)
    with DayAllocator(workers=2, chunk_size=1) as allocator:
        artifact = allocator.build(PendingBatch(world.owner.store), FIRST_DAY)

    assert artifact.totals.listener_days == 60
    assert allocator.most_waiting == 4
    assert artifact.digest == _build(world, workers=1).digest


def test_the_workers_yield_the_cores_to_the_owner():
    """The owner's executor freezes one day while the workers split the next: it must never wait for them. Every
    task a worker runs, a split among them, runs after its initializer, so each reports its worker's priority."""
    with DayAllocator(workers=2) as allocator:
        pool = allocator._started_workers()
        priorities = {future.result() for future in [pool.submit(os.getpriority, os.PRIO_PROCESS, 0)
                                                     for _ in range(16)]}
    assert priorities == {os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICENESS}
