"""Corrections of frozen listener-days (docs/adr/0073): through the day lines they are in, with four eyes.

Chunks are built by the real day allocator and frozen by the ledger's own actor, as in ``test_freeze.py``. A
correction names a frozen listener-day by quoting its line of the chunk's artifact, citing the chunk's bytes as
evidence; each recipient's part comes out of that recipient's day line, which must still be payable, and the
listener-day's budget gives its slice from ``frozen`` to the replacements, ``unallocated`` or a refund.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from ledger_engine.domain.commands.money.corrections import quoted_line_bytes
from ledger_engine.domain.day_lines import day_line_id
from ledger_engine.domain.invariants import budget_terms
from ledger_engine.domain.schema.money_allocation import unfrozen_sentinel_key
from tests.money_allocation.oracle import conservation_problems
from tests.money_allocation.test_freeze import build, checked, day_one, freeze, payload_of  # noqa: F401 (fixture)
from tests.money_allocation.world import FINANCE, FINANCE_2, FIRST_DAY, INGEST, MoneyWorld
from tests.money_payouts.world import LISTENER, WORKS, PayoutWorld
from tests.money_payouts.world import NODES as PAYOUT_NODES
from tests.support import payloads

WORK_3_V2 = {"artist-c": 10_000}  # work-3's rights, corrected: artist-c holds it alone
CORRECTED = "listener-a"  # heard work-1 and work-3, served by node-1 (operator-x) and node-2 (operator-y)
BUDGET = f"budget-{CORRECTED}"


def quote(artifact, listener_id: str, *, chunk: int = 0) -> dict[str, Any]:
    """A listener-day's line of the artifact, as a correction quotes it, with the chunk it is in."""
    line = next(orjson.loads(raw) for raw in artifact.content.splitlines() if orjson.loads(raw)["listener_id"]
                == listener_id)
    return {"chunk": chunk, "hash": artifact.digest, **line}


def rights_fixed(quoted: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """The listener-day's lines again, with work-3's artist lines going to artist-c under version 2."""
    kept = [line for line in quoted["lines"] if line.get("work_id") != "work-3"]
    work_3 = sum(int(line["amount"]) for line in quoted["lines"] if line.get("work_id") == "work-3")
    lines = [*kept, {"role": "artist", "recipient_id": "artist-c", "work_id": "work-3", "rights_version": 2,
                     "amount": str(work_3)}]
    return [{**line, "line_id": f"{prefix}-{number}"} for number, line in enumerate(lines)]


def request(world: MoneyWorld, correction_id: str, quoted: dict[str, Any], *, evidence: list[str] | None = None,
            actor: str = FINANCE, **fields: Any):
    payload = {"correction_id": correction_id, "budget_id": quoted["budget_id"], "reason": "rights_error",
               "frozen_listener_day": quoted, **fields}
    return world.submit("RequestCorrection", payload, actor=actor,
                        evidence=[quoted["hash"]] if evidence is None else evidence)


def parts_of(quoted: dict[str, Any]) -> dict[tuple[str, str | None], int]:
    parts: dict[tuple[str, str | None], int] = {}
    for line in quoted["lines"]:
        parts[(line["role"], line["recipient_id"])] = parts.get((line["role"], line["recipient_id"]), 0) + int(
            line["amount"])
    return parts


def day_line(world: MoneyWorld, role: str, recipient_id: str | None, correction_id: str | None = None,
             *, day: int = FIRST_DAY) -> dict[str, Any] | None:
    return world.state(f"allocation_line/{day_line_id(day, 0, role, recipient_id, correction_id)}")


@pytest.fixture
def frozen(day_one: MoneyWorld):  # noqa: F811 (the fixture imported above)
    """Day one frozen as one chunk; work-3's rights turn out wrong: version 2 is the right one."""
    artifact = build(day_one)
    assert freeze(day_one, payload_of(artifact)).accepted
    day_one.submit_ok("ActivateWork", payloads.rights("work-3", WORK_3_V2, version=2), actor=INGEST)
    return day_one, artifact


def test_the_quote_is_a_line_of_the_chunks_bytes(frozen):
    world, artifact = frozen
    assert quoted_line_bytes(quote(artifact, CORRECTED)) in artifact.content.splitlines(keepends=True)


def test_a_frozen_listener_day_is_corrected_through_its_day_lines_with_four_eyes_and_step_up(frozen):
    world, artifact = frozen
    quoted = quote(artifact, CORRECTED)
    parts = parts_of(quoted)
    replacements = rights_fixed(quoted, "fix-1")
    slice_amount = int(quoted["amount"])
    before_lines = {recipient: day_line(world, *recipient) for recipient in parts}
    budget_before = budget_terms(world.state(f"budget/{BUDGET}"))

    requested = request(world, "fix-1", quoted, replacements=replacements)

    assert requested.accepted, requested.result
    held = world.state("correction_request/fix-1")
    assert sorted(part["line_id"] for part in held["parts"]) == sorted(line["line_id"]
                                                                        for line in before_lines.values())
    assert all(day_line(world, *recipient)["pending_correction"] == "fix-1" for recipient in parts)
    assert budget_terms(world.state(f"budget/{BUDGET}")) == budget_before
    world.assert_rejected_without_change("FOUR_EYES_REQUIRED", lambda: world.decide_correction("fix-1", actor=FINANCE))
    world.assert_rejected_without_change("STEP_UP_REQUIRED", lambda: world.submit("DecideCorrection", {
        "correction_id": "fix-1", "action": "approve", "request_hash": held["request_hash"]}, actor=FINANCE_2))

    decided = world.decide_correction("fix-1")

    assert decided.accepted, decided.result
    # Each day line the listener-day was in: reversed, and what is left of it a remainder day line.
    for (role, recipient_id), part in parts.items():
        old, original = day_line(world, role, recipient_id), before_lines[(role, recipient_id)]
        assert (old["status"], old["reversed_by"], old["pending_correction"], old["amount"]) == (
            "reversed", "fix-1", None, original["amount"])
        remainder = day_line(world, role, recipient_id, "fix-1")
        remains = int(original["amount"]) - part
        if remains == 0:
            assert remainder is None
            continue
        assert (remainder["amount"], remainder["status"], remainder["correction_id"], remainder["replaces"],
                remainder["artifact"], remainder["budget_id"]) == (
            str(remains), "paid" if role == "porto" else "payable", "fix-1", [old["line_id"]],
            original["artifact"], None)
    assert day_line(world, "operator", "operator-y", "fix-1") is None  # node-2 served listener-a alone
    # The replacements: ordinary lines of the listener-day's budget.
    for replacement in replacements:
        line = world.state(f"allocation_line/{replacement['line_id']}")
        assert (line["listener_id"], line["day"], line["budget_id"], line["amount"], line["correction_id"],
                line["recipient_id"]) == (CORRECTED, FIRST_DAY, BUDGET, replacement["amount"], "fix-1",
                                          replacement["recipient_id"])
    porto = sum(int(r["amount"]) for r in replacements if r["role"] == "porto")
    budget = budget_terms(world.state(f"budget/{BUDGET}"))
    assert budget["frozen"] == budget_before["frozen"] - slice_amount == 0
    assert budget["outstanding"] == budget_before["outstanding"] + slice_amount - porto
    assert budget["paid"] == budget_before["paid"] + porto
    assert (budget["unallocated"], budget["refunds_reversals"]) == (budget_before["unallocated"], 0)
    correction = world.state("correction/fix-1")
    assert (correction["unfrozen"], correction["reversed"], correction["replaced"], correction["artifact"]) == (
        str(slice_amount), str(slice_amount), str(slice_amount), {"day": FIRST_DAY, "chunk": 0,
                                                                  "hash": artifact.digest})
    assert {(part["role"], part["recipient_id"]): int(part["amount"]) for part in correction["parts"]} == parts
    assert world.owner.get("unique", unfrozen_sentinel_key(CORRECTED, FIRST_DAY)).data == {"correction_id": "fix-1"}
    verdict = checked(world, "check-1")
    assert (verdict["status"], verdict["mismatch_count"]) == ("clear", 0), verdict
    assert conservation_problems(world.owner) == []  # each account's postings against the lines and budgets


def test_an_unreplaced_remainder_goes_back_to_unallocated_or_out_as_a_refund(frozen):
    world, artifact = frozen
    quoted = quote(artifact, "listener-b")
    slice_amount = int(quoted["amount"])
    before = budget_terms(world.state("budget/budget-listener-b"))
    assert request(world, "fix-2", quoted, reason="evidence_rejected").accepted
    assert world.decide_correction("fix-2").accepted
    after = budget_terms(world.state("budget/budget-listener-b"))
    assert (after["frozen"], after["unallocated"]) == (before["frozen"] - slice_amount,
                                                        before["unallocated"] + slice_amount)
    quoted_c = quote(artifact, "listener-c")
    assert request(world, "fix-3", quoted_c, reason="subscription_refund", remainder_to="refund").accepted
    assert world.decide_correction("fix-3").accepted
    refunded = budget_terms(world.state("budget/budget-listener-c"))
    assert (refunded["frozen"], refunded["refunds_reversals"]) == (0, int(quoted_c["amount"]))
    assert checked(world, "check-1")["status"] == "clear"


# What is refused, and changes nothing.

@pytest.fixture
def paying(world: MoneyWorld):
    """listener-1's third day frozen alone in its chunk, artist-a's day line in a payout run."""
    payouts = PayoutWorld(world).setup()
    day = FIRST_DAY + 2
    world.closed_day(LISTENER, day, "period-1", WORKS, PAYOUT_NODES)
    artifact = build(world, day)
    assert freeze(world, payload_of(artifact)).accepted
    statements = payouts.confirmed_statements(["artist-a"])
    assert payouts.prepare("run-9", {"artist-a": [day_line_id(day, 0, "artist", "artist-a")]}).accepted
    assert payouts.approve("run-9", statements).accepted
    return payouts, quote(artifact, LISTENER)


def test_a_correction_whose_day_line_is_reserved_or_paid_waits_and_changes_nothing(paying):
    payouts, quoted = paying
    world, artist_a = payouts.money, day_line_id(quoted["day"], 0, "artist", "artist-a")
    assert payouts.state(f"allocation_line/{artist_a}")["status"] == "reserved"
    world.assert_rejected_without_change("INVALID_STATE", lambda: request(world, "fix-1", quoted,
                                                                          reason="allocation_error"))
    assert "is reserved" in request(world, "fix-1", quoted, reason="allocation_error").result["detail"]
    payouts.pay("run-9.artist-a", "attempt-9")
    assert payouts.state(f"allocation_line/{artist_a}")["status"] == "paid"
    world.assert_rejected_without_change("INVALID_STATE", lambda: request(world, "fix-2", quoted,
                                                                          reason="allocation_error"))
    assert checked(world, "check-1")["status"] == "clear"


def test_a_day_line_reserved_after_the_request_refuses_the_approval(frozen):
    world, artifact = frozen
    assert request(world, "fix-1", quote(artifact, CORRECTED), reason="allocation_error").accepted
    line = day_line(world, "artist", "artist-a")
    world.submit_ok("TestForgeRecord", {"record_key": f"allocation_line/{line['line_id']}",
                                        "changes": {"status": "reserved"}})
    world.assert_rejected_without_change("INVALID_STATE", lambda: world.decide_correction("fix-1"))


def forged(quoted: dict[str, Any], forgery: str) -> dict[str, Any]:
    bad = copy.deepcopy(quoted)
    lines = bad["lines"]
    operator_y = next(line for line in lines if line["recipient_id"] == "operator-y")
    porto = next(line for line in lines if line["role"] == "porto")
    if forgery == "more_than_the_day_line":  # operator-y's day line is listener-a's part: one more is too much
        operator_y["amount"] = str(int(operator_y["amount"]) + 1)
        porto["amount"] = str(int(porto["amount"]) - 1)
    elif forgery == "not_the_slice":
        porto["amount"] = str(int(porto["amount"]) - 1)
    elif forgery == "a_recipient_the_chunk_does_not_pay":
        operator_y["recipient_id"] = "operator-z"
    elif forgery == "another_chunk":
        bad["chunk"] = 1
    elif forgery == "another_budget":
        bad["budget_id"] = "budget-listener-b"
    elif forgery == "another_listener_day":
        bad["day"] = FIRST_DAY + 1
    return bad


@pytest.mark.parametrize("forgery, code", [
    ("more_than_the_day_line", "COUNT_MISMATCH"),
    ("not_the_slice", "COUNT_MISMATCH"),
    ("a_recipient_the_chunk_does_not_pay", "INVALID_REFERENCE"),
    ("another_chunk", "INVALID_REFERENCE"),
    ("another_budget", "INVALID_REFERENCE"),
    ("another_listener_day", "INVALID_REFERENCE"),
])
def test_a_forged_quote_is_refused_and_changes_nothing(frozen, forgery, code):
    world, artifact = frozen
    bad = forged(quote(artifact, CORRECTED), forgery)
    world.assert_rejected_without_change(code, lambda: request(world, "fix-1", bad, reason="allocation_error"))


def test_a_quote_whose_chunk_is_not_cited_evidence_is_refused(frozen):
    world, artifact = frozen
    world.assert_rejected_without_change("INVALID_REFERENCE", lambda: request(
        world, "fix-1", quote(artifact, CORRECTED), evidence=[], reason="allocation_error"))


def test_a_listener_day_allocated_by_lines_is_not_corrected_as_frozen(allocated: MoneyWorld):
    line = allocated.state("allocation_line/l-0")
    quoted = {"chunk": 0, "hash": "0" * 64, "listener_id": line["listener_id"], "day": line["day"],
              "budget_id": "budget-1", "amount": "100000", "revisions": {"budget/budget-1": 1},
              "lines": [{"role": "porto", "recipient_id": None, "amount": "100000"}]}
    allocated.assert_rejected_without_change("INVALID_REFERENCE", lambda: request(
        allocated, "fix-1", quoted, reason="allocation_error"))


# Twice, and declined.

def test_a_listener_day_is_taken_out_of_its_freeze_once_then_corrected_through_its_replacements(frozen):
    world, artifact = frozen
    quoted = quote(artifact, CORRECTED)
    replacements = rights_fixed(quoted, "fix-1")
    assert request(world, "fix-1", quoted, replacements=replacements).accepted
    assert world.decide_correction("fix-1").accepted
    world.assert_rejected_without_change("INVALID_STATE", lambda: request(world, "fix-2", quoted,
                                                                          replacements=rights_fixed(quoted, "fix-2")))
    assert "taken out of its freeze by correction fix-1" in request(world, "fix-2", quoted).result["detail"]
    # Its lines are now the replacements, ordinary lines of its budget: corrected like any.
    artist_c = next(r for r in replacements if r["recipient_id"] == "artist-c")
    assert world.correct("fix-3", BUDGET, reverses=[artist_c["line_id"]], reason="allocation_error").accepted
    assert world.state(f"allocation_line/{artist_c['line_id']}")["reversed_by"] == "fix-3"
    # Another listener-day of the chunk comes out of the remainders the first correction left.
    quoted_c = quote(artifact, "listener-c")
    assert request(world, "fix-4", quoted_c, reason="allocation_error").accepted
    assert world.decide_correction("fix-4").accepted
    remainder = day_line(world, "artist", "artist-a", "fix-1")
    assert (remainder["status"], remainder["reversed_by"]) == ("reversed", "fix-4")
    left = day_line(world, "artist", "artist-a", "fix-4")
    assert int(left["amount"]) == int(remainder["amount"]) - parts_of(quoted_c)[("artist", "artist-a")]
    verdict = checked(world, "check-1")
    assert (verdict["status"], verdict["mismatch_count"]) == ("clear", 0), verdict


def test_a_declined_correction_releases_its_day_lines_and_changes_no_money(frozen):
    world, artifact = frozen
    quoted = quote(artifact, CORRECTED)
    budget_before = world.state(f"budget/{BUDGET}")
    assert request(world, "fix-1", quoted, replacements=rights_fixed(quoted, "fix-1")).accepted
    # listener-c shares artist-a's day line: its correction waits while that line is held.
    world.assert_rejected_without_change("INVALID_STATE", lambda: request(world, "fix-2", quote(artifact, "listener-c"),
                                                                          reason="allocation_error"))
    assert world.decide_correction("fix-1", "decline", decline_reason="amounts_disputed").accepted
    assert world.state("correction_request/fix-1")["status"] == "declined"
    for role, recipient_id in parts_of(quoted):
        line = day_line(world, role, recipient_id)
        assert (line["status"], line["pending_correction"], line["reversed_by"]) == (
            "paid" if role == "porto" else "payable", None, None)
    assert world.state(f"budget/{BUDGET}") == budget_before
    assert world.owner.get("unique", unfrozen_sentinel_key(CORRECTED, FIRST_DAY)) is None
    assert world.state("correction/fix-1") is None
    assert request(world, "fix-3", quoted, replacements=rights_fixed(quoted, "fix-3")).accepted


# The full check.

def test_the_full_check_holds_a_corrected_chunks_live_day_lines_and_parts_to_its_totals(frozen):
    world, artifact = frozen
    quoted = quote(artifact, CORRECTED)
    assert request(world, "fix-1", quoted, replacements=rights_fixed(quoted, "fix-1")).accepted
    assert world.decide_correction("fix-1").accepted
    remainder = day_line(world, "artist", "artist-a", "fix-1")
    world.submit_ok("TestForgeRecord", {"record_key": f"allocation_line/{remainder['line_id']}",
                                        "changes": {"amount": str(int(remainder["amount"]) + 1)}})
    verdict = checked(world, "check-1")
    assert [(m["subject"], m["check"]) for m in verdict["mismatches"]] == [("day_chunk/%020d/%020d" % (FIRST_DAY, 0),
                                                                            "day_lines")], verdict["mismatches"]
    world.submit_ok("TestForgeRecord", {"record_key": f"allocation_line/{remainder['line_id']}",
                                        "changes": {"amount": remainder["amount"]}})
    correction = world.state("correction/fix-1")
    world.submit_ok("TestForgeRecord", {"record_key": "correction/fix-1",
                                        "changes": {"unfrozen": str(int(correction["unfrozen"]) - 1)}})
    verdict = checked(world, "check-2")
    assert {(m["subject"], m["check"]) for m in verdict["mismatches"]} == {
        (f"budget/{BUDGET}", "frozen"), ("correction/fix-1", "unfrozen"), ("correction/fix-1", "listener_day")}
