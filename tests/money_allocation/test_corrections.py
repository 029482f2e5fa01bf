"""Corrections: requested by one finance actor, decided by another, posted once, never overwriting history."""

from __future__ import annotations

import pytest

from ledger_engine.errors import LedgerError
from ledger_engine.layout import EVENTS
from tests.money_allocation.oracle import conservation_problems
from tests.money_allocation.world import (
    BUDGET, DAY_ONE_LINES, FINANCE, FINANCE_2, FIRST_DAY, INGEST, LISTENER, MoneyWorld,
)
from tests.support import payloads

# Day one's lines are test_allocate.EXPECTED_LINES: l-0 is artist-a's 45_000 for work-1, l-3 and l-4 are
# work-3's artists (2_500 and 5_000), l-5 and l-6 the operators of node-1 and node-2, l-7 is Porto's 10_000.
WORK_3_V2 = {"artist-c": 10_000}  # work-3's rights, corrected: artist-c holds it alone


def terms(world: MoneyWorld) -> tuple[str, ...]:
    budget = world.state("budget/budget-1")
    return tuple(budget[t] for t in ("unallocated", "outstanding", "paid", "refunds_reversals"))


def replacement(line_id: str, recipient: str, amount: int, work: str = "work-3", version: int = 2) -> dict:
    return {"line_id": line_id, "role": "artist", "recipient_id": recipient, "work_id": work,
            "rights_version": version, "amount": str(amount)}


@pytest.fixture
def corrected_rights(allocated: MoneyWorld) -> MoneyWorld:
    """Work-3's rights were wrong on day one; version 2 is the right one."""
    allocated.submit_ok("ActivateWork", payloads.rights("work-3", WORK_3_V2, version=2), actor=INGEST)
    return allocated


def posted_lines(world: MoneyWorld, sequence: int) -> list[tuple[str, str, str]]:
    posted = [e for _, e in world.owner.scan(EVENTS, f"{sequence:020d}/") if e["type"] == "Posted"]
    return [(l["account"], l["side"], l["amount"]) for event in posted for l in event["lines"]]


def test_a_rights_error_is_requested_then_approved_by_someone_else(corrected_rights: MoneyWorld):
    world, before = corrected_rights, terms(corrected_rights)
    requested = world.request_correction("fix-1", "budget-1", reverses=["l-3", "l-4"],
                                         replacements=[replacement("r-1", "artist-c", 7_500)])
    assert requested.accepted, requested.result
    request = world.state("correction_request/fix-1")
    assert (request["status"], request["requested_by"], request["request_hash"]) == \
        ("requested", FINANCE, requested.result["data"]["request_hash"])
    assert request["entries"] == [
        {"account": "artist_payable:artist-b", "side": "debit", "amount": "2500"},
        {"account": "artist_payable:artist-c", "side": "debit", "amount": "5000"},
        {"account": "artist_payable:artist-c", "side": "credit", "amount": "7500"}]
    assert world.state("allocation_line/l-3")["pending_correction"] == "fix-1"
    assert world.state("allocation_line/r-1") is None and world.state("correction/fix-1") is None
    assert posted_lines(world, requested.sequence) == []

    decided = world.decide_correction("fix-1")
    assert decided.accepted, decided.result
    assert terms(world) == before
    for line_id in ("l-3", "l-4"):
        line = world.state(f"allocation_line/{line_id}")
        assert (line["status"], line["reversed_by"], line["pending_correction"]) == ("reversed", "fix-1", None)
    new_line = world.state("allocation_line/r-1")
    assert (new_line["status"], new_line["correction_id"], new_line["replaces"], new_line["listener_id"],
            new_line["day"], new_line["rights_version"]) == ("payable", "fix-1", ["l-3", "l-4"], LISTENER, FIRST_DAY, 2)
    assert new_line["correlation_id"] == "correction:fix-1"
    correction = world.state("correction/fix-1")
    assert (correction["reversed"], correction["replaced"], correction["released"], correction["refunded"]) == \
        ("7500", "7500", "0", "0")
    assert (correction["requested_by"], correction["approved_by"]) == (FINANCE, FINANCE_2)
    assert posted_lines(world, decided.sequence) == [(e["account"], e["side"], e["amount"]) for e in request["entries"]]
    assert world.state("correction_request/fix-1")["status"] == "approved"
    assert conservation_problems(world.owner) == []


def test_attack_1_one_actor_cannot_correct_alone_by_naming_a_colleague(corrected_rights: MoneyWorld):
    """The old RecordCorrection took ``requested_by`` from the payload; nothing in the ledger accepts that now."""
    world = corrected_rights
    stolen = {"correction_id": "fix-1", "budget_id": "budget-1", "reason": "rights_error", "requested_by": FINANCE_2,
              "reverses": ["l-3", "l-4"], "replacements": [replacement("r-1", "operator-x", 7_500, "work-404", 1)]}
    head = world.owner.head()
    for command_type in ("RecordCorrection", "RequestCorrection"):
        with pytest.raises(LedgerError) as refused:
            world.submit(command_type, stolen, actor=FINANCE)
        assert refused.value.code in ("UNKNOWN_COMMAND_TYPE", "UNKNOWN_FIELD")
    assert world.owner.head() == head

    assert world.request_correction("fix-1", "budget-1", reverses=["l-3", "l-4"],
                                    replacements=[replacement("r-1", "artist-c", 7_500)]).accepted
    world.assert_rejected_without_change("FOUR_EYES_REQUIRED", lambda: world.decide_correction("fix-1", actor=FINANCE))
    world.assert_rejected_without_change("CAPABILITY_MISSING", lambda: world.decide_correction("fix-1", actor=INGEST))
    assert world.state("allocation_line/l-3")["status"] == "payable"


def test_attack_1_replacements_must_be_what_the_ledger_would_pay(corrected_rights: MoneyWorld):
    world = corrected_rights
    world.submit_ok("ImportCatalogue", payloads.catalogue("import-2", payloads.work("work-9")), actor=INGEST)
    cases = [
        ("INVALID_REFERENCE", [replacement("r-1", "operator-x", 7_500, "work-404", 1)]),  # no such work
        ("INVALID_REFERENCE", [replacement("r-1", "artist-c", 7_500, "work-9", 1)]),  # imported, never active
        ("INVALID_REFERENCE", [replacement("r-1", "artist-c", 7_500, "work-3", 1)]),  # not the current version
        ("INVALID_SPLITS", [replacement("r-1", "operator-x", 7_500)]),  # not a recipient of version 2
        ("INVALID_SPLITS", [replacement("r-1", "artist-c", 5_000, "work-1", 1)]),  # work-1 pays artist-a
        ("INVALID_SPLITS", [replacement("r-1", "artist-a", 3_750, "work-2", 1),
                            replacement("r-2", "artist-b", 3_000, "work-2", 1)]),  # not work-2's 50/50 split
        ("INVALID_SPLITS", [replacement("r-1", "artist-b", 5_000, "work-2", 1),
                            replacement("r-2", "artist-a", 1_250, "work-2", 1),
                            replacement("r-3", "artist-b", 1_250, "work-2", 1)]),  # b twice: 6_250 to a's 1_250
        ("INVALID_REFERENCE", [{"line_id": "r-1", "role": "operator", "recipient_id": "operator-y",
                                "node_id": "node-1", "amount": "7500"}]),  # node-1 is operator-x's
        ("INVALID_REFERENCE", [{"line_id": "r-1", "role": "operator", "recipient_id": "operator-x",
                                "node_id": "node-404", "amount": "7500"}]),
        ("INVALID_REFERENCE", [replacement("r-1", "artist-z", 7_500)]),  # not a recipient at all
    ]
    for code, replacements in cases:
        world.assert_rejected_without_change(code, lambda: world.request_correction(
            "fix-1", "budget-1", reverses=["l-3", "l-4"], replacements=replacements))
    assert world.request_correction("fix-1", "budget-1", reverses=["l-1", "l-2"], replacements=[
        replacement("r-1", "artist-a", 11_250, "work-2", 1), replacement("r-2", "artist-b", 11_250, "work-2", 1)
    ]).accepted


def test_a_correction_posts_exactly_once(corrected_rights: MoneyWorld):
    world = corrected_rights
    assert world.correct("fix-1", "budget-1", reverses=["l-3", "l-4"],
                         replacements=[replacement("r-1", "artist-c", 7_500)]).accepted
    for action in ("approve", "decline"):
        world.assert_rejected_without_change("INVALID_STATE", lambda: world.decide_correction(
            "fix-1", action, decline_reason="superseded" if action == "decline" else None))
    world.assert_rejected_without_change("ALREADY_EXISTS", lambda: world.request_correction(
        "fix-1", "budget-1", reverses=["l-0"]))
    journals = [e["journal"] for _, e in world.owner.scan(EVENTS, limit=100_000) if e["type"] == "Posted"]
    assert journals.count("correction:fix-1") == 1
    assert conservation_problems(world.owner) == []


def test_a_declined_correction_releases_its_lines(corrected_rights: MoneyWorld):
    world, before = corrected_rights, terms(corrected_rights)
    assert world.request_correction("fix-1", "budget-1", reverses=["l-3", "l-4"],
                                    replacements=[replacement("r-1", "artist-c", 7_500)]).accepted
    world.assert_rejected_without_change("INVALID_STATE", lambda: world.request_correction(
        "fix-2", "budget-1", reverses=["l-4"]))  # held for fix-1
    declined = world.decide_correction("fix-1", "decline", decline_reason="evidence_insufficient")
    assert declined.accepted, declined.result
    assert terms(world) == before
    assert [world.state(f"allocation_line/{i}")["pending_correction"] for i in ("l-3", "l-4")] == [None, None]
    assert world.state("correction_request/fix-1")["decision"]["reason"] == "evidence_insufficient"
    assert world.state("correction/fix-1") is None
    assert world.correct("fix-2", "budget-1", reverses=["l-4"]).accepted


def test_approval_checks_the_request_again_and_restates_its_hash(corrected_rights: MoneyWorld):
    world = corrected_rights
    assert world.request_correction("fix-1", "budget-1", reverses=["l-3", "l-4"],
                                    replacements=[replacement("r-1", "artist-c", 7_500)]).accepted
    world.assert_rejected_without_change("REQUEST_HASH_MISMATCH", lambda: world.decide_correction(
        "fix-1", request_hash="ab" * 32))
    world.submit_ok("ActivateWork", payloads.rights("work-3", {"artist-b": 10_000}, version=3), actor=INGEST)
    world.assert_rejected_without_change("INVALID_REFERENCE", lambda: world.decide_correction("fix-1"))
    assert world.decide_correction("fix-1", "decline", decline_reason="superseded").accepted


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


def test_porto_share_and_operator_lines_can_be_corrected(allocated: MoneyWorld):
    outcome = allocated.correct("fix-1", "budget-1", reason="operator_error", reverses=["l-7"], replacements=[
        {"line_id": "r-1", "role": "porto", "amount": "4000"},
        {"line_id": "r-2", "role": "operator", "recipient_id": "operator-x", "node_id": "node-1", "amount": "6000"}])
    assert outcome.accepted, outcome.result
    assert terms(allocated) == ("2900000", "96000", "4000", "0")
    assert allocated.state("allocation_line/r-1")["status"] == "paid"
    assert allocated.correct("fix-2", "budget-1", reason="operator_error", reverses=["l-5"], replacements=[
        {"line_id": "r-3", "role": "operator", "recipient_id": "operator-y", "node_id": "node-2",
         "amount": "10500"}]).accepted
    assert conservation_problems(allocated.owner) == []


def test_only_payable_lines_and_porto_share_of_one_budget_and_day_can_be_reversed(corrected_rights: MoneyWorld):
    world = corrected_rights
    world.period("period-2", "listener-2", days=30)
    world.fund("budget-2", "period-2", {"lot-1": 3_000})
    world.closed_day(LISTENER, FIRST_DAY + 1, "period-1", {"work-1": 1})
    assert world.allocate(LISTENER, FIRST_DAY + 1, "budget-1", line_ids=["d2-0", "d2-1"]).accepted
    world.submit_ok("TestForgeRecord", {"record_key": "allocation_line/l-1", "changes": {"status": "reserved"}})
    assert world.correct("fix-0", "budget-1", reverses=["l-0"]).accepted
    cases = [
        ("INVALID_STATE", dict(reverses=["l-0"])),  # already reversed
        ("INVALID_STATE", dict(reverses=["l-1"])),  # reserved by a payout run
        ("INVALID_REFERENCE", dict(reverses=["d2-0", "l-2"])),  # two listener-days
        ("INVALID_STATE", dict(reverses=["l-3"], replacements=[replacement("r-1", "artist-c", 2_501)])),
        ("ALREADY_EXISTS", dict(reverses=["l-3"], replacements=[replacement("l-4", "artist-c", 2_500)])),
        ("INSUFFICIENT_FUNDS", dict(refund_unallocated=str(BUDGET))),
        ("NOT_FOUND", dict(reverses=["l-404"])),
    ]
    for code, fields in cases:
        world.assert_rejected_without_change(code, lambda: world.request_correction("fix-1", "budget-1", **fields))
    world.assert_rejected_without_change("INVALID_REFERENCE", lambda: world.request_correction(
        "fix-1", "budget-2", reverses=["l-2"]))
    world.assert_rejected_without_change("ALREADY_EXISTS", lambda: world.request_correction(
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
    {"reverses": ["l-1"], "requested_by": FINANCE_2},
])
def test_malformed_correction_requests_are_refused_before_admission(allocated: MoneyWorld, fields):
    head = allocated.owner.head()
    with pytest.raises(LedgerError) as raised:
        allocated.request_correction("fix-1", "budget-1", **fields)
    assert raised.value.code in ("INVALID_PAYLOAD", "UNKNOWN_FIELD")
    assert allocated.owner.head() == head


def test_a_decision_names_its_reason_only_when_it_declines(allocated: MoneyWorld):
    assert allocated.request_correction("fix-1", "budget-1", reverses=["l-0"]).accepted
    for action, reason in (("approve", "superseded"), ("decline", None)):
        with pytest.raises(LedgerError) as raised:
            allocated.decide_correction("fix-1", action, decline_reason=reason)
        assert raised.value.code == "INVALID_PAYLOAD"
