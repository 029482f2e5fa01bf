"""The conservation checker: per-command deltas, the full check, and the payout block it controls."""

from __future__ import annotations

import pytest

from ledger_engine.application.pending import PendingBatch
from ledger_engine.domain.changes import Changes, Rejected
from ledger_engine.domain.chart import FUNDING_AVAILABLE, budget_unallocated
from ledger_engine.domain.invariants import command_mismatches, require_payouts_unblocked
from ledger_engine.domain.postings import credit, debit, post
from ledger_engine.errors import ErrorCode
from ledger_engine.selectors.money_queries import budget_equation
from ledger_engine.selectors.overview_queries import conservation_status
from tests.money_allocation.world import FIRST_DAY, LISTENER, MoneyWorld


def forge(world: MoneyWorld, record_key: str, **changes: str) -> None:
    world.submit_ok("TestForgeRecord", {"record_key": record_key, "changes": changes})


def gate(world: MoneyWorld) -> str:
    return world.submit("TestPayoutGate", {}).code


def test_a_clean_ledger_checks_clear_and_payouts_pass(allocated: MoneyWorld):
    outcome = allocated.check("check-1")
    assert outcome.result["data"] == {"status": "clear", "mismatch_count": 0}
    assert conservation_status(allocated.owner.view()) == {
        "status": "clear", "check_id": "check-1", "checked_at_sequence": outcome.sequence, "mismatch_count": 0}
    assert gate(allocated) == "OK"


@pytest.mark.parametrize("record_key, changes, check", [
    ("budget/budget-1", {"outstanding": "90001", "unallocated": "2899999"}, "outstanding"),  # lines disagree
    ("budget/budget-1", {"paid": "10001"}, "equation"),
    ("budget/budget-1", {"funded": "3000001", "unallocated": "2900001"}, "funded"),  # lot draws disagree
    ("lot/lot-1", {"allocated": "5000001"}, "received"),
    ("allocation_line/l-0", {"amount": "45001"}, "outstanding"),
])
def test_any_mismatch_blocks_payouts_until_a_clean_check(allocated: MoneyWorld, record_key, changes, check):
    original = {name: allocated.state(record_key)[name] for name in changes}
    forge(allocated, record_key, **changes)
    outcome = allocated.check("check-1")
    assert outcome.result["data"]["status"] == "blocked"
    recorded = allocated.state("conservation")
    assert check in {m["check"] for m in recorded["mismatches"]}, recorded["mismatches"]
    assert conservation_status(allocated.owner.view())["status"] == "blocked"
    assert gate(allocated) == "PAYOUTS_BLOCKED"

    forge(allocated, record_key, **original)
    assert gate(allocated) == "PAYOUTS_BLOCKED"  # only a clean full check lifts the block
    assert allocated.check("check-2").result["data"]["status"] == "clear"
    assert gate(allocated) == "OK"


def test_an_unbalanced_budget_shows_in_its_summary(allocated: MoneyWorld):
    forge(allocated, "budget/budget-1", paid="10001")
    summary = budget_equation(allocated.owner.view(), "budget-1")
    assert [m["check"] for m in summary["mismatches"]] == ["equation"]
    assert allocated.owner.store.get("indexes", b"budget_unbalanced/budget-1") is not None


def test_accounting_on_a_broken_budget_is_rejected_and_changes_nothing(allocated: MoneyWorld):
    forge(allocated, "budget/budget-1", paid="10001")
    allocated.closed_day(LISTENER, FIRST_DAY + 1, "period-1", {"work-1": 1})
    attempts = (lambda: allocated.allocate(LISTENER, FIRST_DAY + 1, "budget-1"),
                lambda: allocated.correct("fix-1", "budget-1", reverses=["l-0"]),
                lambda: allocated.fund("budget-1", "period-1", {"lot-1": 1}, version=2, actor="fin-1"))
    for attempt in attempts:
        allocated.assert_rejected_without_change("INVARIANT_VIOLATION", attempt)


def mismatches_after(world: MoneyWorld, write) -> list[str]:
    """The checks ``command_mismatches`` fails for the writes ``write(changes)`` makes on the current ledger."""
    def run(store):
        changes = Changes(base=PendingBatch(store))
        write(changes)
        return [(m.subject, m.check) for m in command_mismatches(changes)]
    return world.owner.at_boundary(run)


def line(changes: Changes, line_id: str, **fields) -> None:
    record = changes.get("state", f"allocation_line/{line_id}").data
    changes.put_state(f"allocation_line/{line_id}", {**record, **fields})


def budget(changes: Changes, **fields) -> None:
    record = changes.get("state", "budget/budget-1").data
    changes.put_state("budget/budget-1", {**record, **fields})


def test_per_command_check_accepts_a_consistent_payout_style_move(allocated: MoneyWorld):
    def reserve_then_pay(changes):
        line(changes, "l-0", status="paid")
        budget(changes, outstanding="45000", paid="55000")
    assert mismatches_after(allocated, reserve_then_pay) == []
    assert mismatches_after(allocated, lambda changes: line(changes, "l-0", status="reserved")) == []


@pytest.mark.parametrize("write, expected", [
    (lambda c: line(c, "l-0", status="paid"), [("budget/budget-1", "outstanding"), ("budget/budget-1", "paid")]),
    (lambda c: budget(c, outstanding="45000", paid="55000"),
     [("budget/budget-1", "outstanding"), ("budget/budget-1", "paid")]),
    (lambda c: budget(c, unallocated="2899999", refunds_reversals="1"),
     [("budget/budget-1", "unallocated"), ("budget/budget-1", "refunds_reversals")]),
    (lambda c: post(c, journal="stray", asset="USDC", lines=[debit(FUNDING_AVAILABLE, 5),
                                                             credit(budget_unallocated("budget-1"), 5)]),
     [("budget/budget-1", "unallocated")]),
    (lambda c: c.put_state("lot/lot-1", {**c.get("state", "lot/lot-1").data, "allocated": "3000005"}),
     [("lots", "allocated")]),
    (lambda c: line(c, "l-0", budget_id="budget-9"),
     [("budget/budget-1", "outstanding"), ("budget/budget-9", "exists")]),
])
def test_per_command_check_finds_terms_that_records_do_not_account_for(allocated: MoneyWorld, write, expected):
    assert mismatches_after(allocated, write) == expected


def test_the_payout_gate_refuses_a_command_whose_own_writes_break_conservation(allocated: MoneyWorld):
    def run(store):
        changes = Changes(base=PendingBatch(store))
        line(changes, "l-0", status="paid")
        with pytest.raises(Rejected) as raised:
            require_payouts_unblocked(changes)
        return raised.value.code
    assert allocated.owner.at_boundary(run) == ErrorCode.PAYOUTS_BLOCKED
