"""RecordCorrection: reversals and replacements that append, never overwrite, and conserve every budget."""

from __future__ import annotations

import pytest

from ledger_engine.errors import LedgerError
from ledger_engine.layout import EVENTS
from tests.money_allocation.oracle import conservation_problems
from tests.money_allocation.world import BUDGET, DAY_ONE_LINES, FINANCE, FINANCE_2, FIRST_DAY, LISTENER, MoneyWorld

# Day one's lines are test_allocate.EXPECTED_LINES: l-0 is artist-a's 45_000 for work-1, l-3 and l-4 are
# work-3's artists (2_500 and 5_000), l-7 is Porto's 10_000.


def terms(world: MoneyWorld) -> tuple[str, ...]:
    budget = world.state("budget/budget-1")
    return tuple(budget[t] for t in ("unallocated", "outstanding", "paid", "refunds_reversals"))


def replacement(line_id: str, recipient: str, amount: int, work: str = "work-3") -> dict:
    return {"line_id": line_id, "role": "artist", "recipient_id": recipient, "work_id": work,
            "rights_version": 1, "amount": str(amount)}


def test_a_rights_error_is_reversed_and_replaced_without_touching_the_budget_totals(allocated: MoneyWorld):
    before = terms(allocated)
    outcome = allocated.correct("fix-1", "budget-1", reverses=["l-3", "l-4"],
                                replacements=[replacement("r-1", "artist-c", 7_500)])
    assert outcome.accepted, outcome.result
    assert terms(allocated) == before
    assert [allocated.state(f"allocation_line/{i}")["status"] for i in ("l-3", "l-4")] == ["reversed", "reversed"]
    assert allocated.state("allocation_line/l-3")["reversed_by"] == "fix-1"
    new_line = allocated.state("allocation_line/r-1")
    assert (new_line["status"], new_line["correction_id"], new_line["listener_id"], new_line["day"]) == \
        ("payable", "fix-1", LISTENER, FIRST_DAY)
    correction = allocated.state("correction/fix-1")
    assert (correction["reversed"], correction["replaced"], correction["released"], correction["refunded"]) == \
        ("7500", "7500", "0", "0")
    assert (correction["requested_by"], correction["approved_by"]) == (FINANCE, FINANCE_2)
    posted = [e for _, e in allocated.owner.scan(EVENTS, f"{outcome.sequence:020d}/") if e["type"] == "Posted"]
    assert [(l["account"], l["side"], l["amount"]) for l in posted[0]["lines"]] == [
        ("artist_payable:artist-b", "debit", "2500"), ("artist_payable:artist-c", "debit", "5000"),
        ("artist_payable:artist-c", "credit", "7500")]
    assert conservation_problems(allocated.owner) == []


def test_rejected_evidence_returns_the_whole_day_to_unallocated(allocated: MoneyWorld):
    outcome = allocated.correct("fix-1", "budget-1", reason="evidence_rejected", reverses=sorted(DAY_ONE_LINES))
    assert outcome.accepted, outcome.result
    assert terms(allocated) == (str(BUDGET), "0", "0", "0")
    assert conservation_problems(allocated.owner) == []


def test_a_reversal_can_leave_the_budget_as_a_refund(allocated: MoneyWorld):
    assert allocated.correct("fix-1", "budget-1", reverses=["l-0"], remainder_to="refund").accepted
    assert terms(allocated) == ("2900000", "45000", "10000", "45000")
    assert allocated.correct("fix-2", "budget-1", reason="subscription_refund",
                             refund_unallocated="2900000").accepted
    assert terms(allocated) == ("0", "45000", "10000", "2945000")
    assert conservation_problems(allocated.owner) == []


def test_porto_share_can_be_reversed_and_replaced(allocated: MoneyWorld):
    outcome = allocated.correct("fix-1", "budget-1", reverses=["l-7"], replacements=[
        {"line_id": "r-1", "role": "porto", "amount": "4000"},
        {"line_id": "r-2", "role": "operator", "recipient_id": "operator-x", "node_id": "node-1", "amount": "6000"}])
    assert outcome.accepted, outcome.result
    assert terms(allocated) == ("2900000", "96000", "4000", "0")
    assert allocated.state("allocation_line/r-1")["status"] == "paid"
    assert conservation_problems(allocated.owner) == []


def test_four_eyes_and_finance_requester(allocated: MoneyWorld):
    allocated.assert_rejected_without_change("FOUR_EYES_REQUIRED", lambda: allocated.correct(
        "fix-1", "budget-1", reverses=["l-0"], actor=FINANCE))
    allocated.assert_rejected_without_change("CAPABILITY_MISSING", lambda: allocated.correct(
        "fix-1", "budget-1", reverses=["l-0"], requested_by="ingest-1"))


def test_only_payable_lines_and_porto_share_of_one_budget_and_day_can_be_reversed(allocated: MoneyWorld):
    allocated.period("period-2", "listener-2", days=30)
    allocated.fund("budget-2", "period-2", {"lot-1": 3_000})
    allocated.closed_day(LISTENER, FIRST_DAY + 1, "period-1", {"work-1": 1})
    assert allocated.allocate(LISTENER, FIRST_DAY + 1, "budget-1", line_ids=["d2-0", "d2-1"]).accepted
    allocated.submit_ok("TestForgeRecord", {"record_key": "allocation_line/l-1", "changes": {"status": "reserved"}})
    assert allocated.correct("fix-0", "budget-1", reverses=["l-0"]).accepted
    cases = [
        ("INVALID_STATE", dict(reverses=["l-0"])),  # already reversed
        ("INVALID_STATE", dict(reverses=["l-1"])),  # reserved by a payout run
        ("INVALID_REFERENCE", dict(reverses=["d2-0", "l-2"])),  # two listener-days
        ("INVALID_STATE", dict(reverses=["l-3"], replacements=[replacement("r-1", "artist-c", 2_501)])),
        ("INVALID_REFERENCE", dict(reverses=["l-3"], replacements=[replacement("r-1", "artist-z", 2_500)])),
        ("ALREADY_EXISTS", dict(reverses=["l-3"], replacements=[replacement("l-4", "artist-c", 2_500)])),
        ("INSUFFICIENT_FUNDS", dict(refund_unallocated=str(BUDGET))),
        ("NOT_FOUND", dict(reverses=["l-404"])),
    ]
    for code, fields in cases:
        allocated.assert_rejected_without_change(code, lambda: allocated.correct("fix-1", "budget-1", **fields))
    allocated.assert_rejected_without_change("INVALID_REFERENCE", lambda: allocated.correct(
        "fix-1", "budget-2", reverses=["l-2"]))
    allocated.assert_rejected_without_change("ALREADY_EXISTS", lambda: allocated.correct(
        "fix-0", "budget-1", reverses=["l-2"]))


@pytest.mark.parametrize("fields", [
    {},  # does nothing
    {"replacements": [replacement("r-1", "artist-c", 1)]},  # replaces nothing
    {"reverses": ["l-2", "l-1"]},  # out of order
    {"reverses": ["l-1"], "replacements": [{**replacement("r-1", "artist-c", 1), "node_id": "node-1"}]},
    {"reverses": ["l-1"], "replacements": [{"line_id": "r-1", "role": "porto", "recipient_id": "artist-a",
                                             "amount": "1"}]},
    {"reverses": ["l-1"], "replacements": [replacement("l-1", "artist-c", 1)]},
    {"reverses": ["l-1"], "reason": "because"},
])
def test_malformed_corrections_are_refused_before_admission(allocated: MoneyWorld, fields):
    head = allocated.owner.head()
    with pytest.raises(LedgerError) as raised:
        allocated.correct("fix-1", "budget-1", **fields)
    assert raised.value.code in ("INVALID_PAYLOAD", "UNKNOWN_FIELD")
    assert allocated.owner.head() == head
