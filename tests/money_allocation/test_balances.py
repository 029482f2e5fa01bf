"""Balance reads: closest cached point plus folded tail equals a fold from scratch, at any sequence."""

from __future__ import annotations

from collections import defaultdict

import orjson
import pytest

from ledger_engine.domain.chart import PORTO_RETAINED, artist_payable, budget_unallocated
from ledger_engine.layout import EVENTS
from ledger_engine.projections.money import POINT_INTERVAL, cursor_key
from ledger_engine.selectors.money_queries import balance, budget_equation, folded_balance, payables
from ledger_engine.projections.rebuild import indexes_digest, rebuild_indexes
from tests.money_allocation.world import FIRST_DAY, MoneyWorld

LISTENERS, DAYS = 10, 30  # 300 allocations: Porto's account passes two cached points


@pytest.fixture
def busy(world: MoneyWorld) -> MoneyWorld:
    world.lot("lot-1", 10**9)
    days = []
    for number in range(LISTENERS):
        listener, period = f"listener-{number}", f"period-{number}"
        world.period(period, listener, days=DAYS)
        assert world.fund(f"budget-{number}", period, {"lot-1": 1_000_000 + number}).accepted
        days += [{"listener_id": listener, "day": FIRST_DAY + d, "period_id": period,
                  "works": [{"work_id": f"work-{1 + (number + d) % 3}", "rights_version": 1, "listened_ms": 1_000}]}
                 for d in range(DAYS)]
    world.submit_ok("TestStreamingRecords", {"days": days})
    for day in range(FIRST_DAY, FIRST_DAY + DAYS):
        for number in range(LISTENERS):
            assert world.allocate(f"listener-{number}", day, f"budget-{number}").accepted
    return world


def fold_events(world: MoneyWorld, account: str, upto: int) -> tuple[int, int]:
    totals = defaultdict(int)
    for raw_key, raw in world.owner.store.scan(EVENTS):
        if int(raw_key.split(b"/")[0]) > upto:
            break
        event = orjson.loads(raw)
        for line in event.get("lines", []) if event["type"] == "Posted" else []:
            if line["account"] == account:
                totals[line["side"]] += int(line["amount"])
    return totals["debit"], totals["credit"]


def test_cached_points_are_appended_every_interval(busy: MoneyWorld):
    cursor = orjson.loads(busy.owner.store.get("indexes", cursor_key("USDC", PORTO_RETAINED).encode()))
    assert cursor["postings"] == LISTENERS * DAYS
    assert cursor["points"] == LISTENERS * DAYS // POINT_INTERVAL >= 2


@pytest.mark.parametrize("account", [PORTO_RETAINED, artist_payable("artist-a"), budget_unallocated("budget-3"),
                                     "treasury", "never-posted"])
def test_a_read_equals_the_fold_from_scratch_at_every_sampled_sequence(busy: MoneyWorld, account):
    head = busy.owner.head().sequence
    for sequence in [*range(0, head, 37), head]:
        cached = balance(busy.owner.view(), account, "USDC", at_sequence=sequence)
        scratch = folded_balance(busy.owner.view(), account, "USDC", at_sequence=sequence)
        assert cached == scratch
        assert (cached.debits, cached.credits) == fold_events(busy, account, sequence)
    assert balance(busy.owner.view(), account, "USDC").sequence == head


def test_budget_and_payable_reads_agree_with_the_records(busy: MoneyWorld):
    summary = budget_equation(busy.owner.view(), "budget-3")
    assert summary["mismatches"] == []
    assert summary["unallocated_posted"] == summary["terms"]["unallocated"] == "0"
    owed = payables(busy.owner.view(), "artist-a")
    assert int(owed["total"]) == balance(busy.owner.view(), artist_payable("artist-a"), "USDC").net_credit > 0
    assert all(line["role"] == "artist" for line in owed["lines"])


def test_rebuilt_indexes_are_byte_identical(busy: MoneyWorld):
    maintained, rebuilt = busy.owner.at_boundary(lambda store: (indexes_digest(store), rebuild_indexes(store)))
    assert rebuilt == maintained
