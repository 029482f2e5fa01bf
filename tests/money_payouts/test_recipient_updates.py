"""UpdateRecipient: evidence, four eyes, holds, invalidation of unsigned runs, signed attempts untouched."""

from __future__ import annotations

import pytest

from ledger_engine.domain.commands.money.payout_runs import successor_id
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import OUTBOX
from tests.money_allocation.world import FINANCE, FINANCE_2
from tests.money_payouts.oracle import payout_problems
from tests.money_payouts.world import PayoutWorld, digest
from tests.support import payloads

NEW_ADDRESS = payloads.address("artist-a-new-wallet")


def request(world: PayoutWorld, update_id: str = "update-1", *, version: int = 2, address: str = NEW_ADDRESS,
            actor: str = FINANCE, listed: bool = True):
    evidence = digest("ownership", update_id)
    step = {"action": "request", "version": version, "payout_address": address, "evidence_digest": evidence}
    return world.submit("UpdateRecipient", {"update_id": update_id, "recipient_id": "artist-a", "step": step},
                        actor=actor, evidence=[evidence] if listed else [])


def decide(world: PayoutWorld, action: str, update_id: str = "update-1", *, actor: str = FINANCE_2, **step):
    if action == "approve":
        step = {"version": 2, "payout_address": NEW_ADDRESS, **step}
    return world.submit("UpdateRecipient", {"update_id": update_id, "recipient_id": "artist-a",
                                            "step": {"action": action, **step}}, actor=actor,
                        step_up=action == "approve")


def test_a_change_is_requested_with_evidence_and_approved_by_someone_else(payouts: PayoutWorld):
    old_address = payouts.state("recipient/artist-a")["payout_address"]
    outcome = request(payouts)
    assert outcome.accepted, outcome.result
    update = payouts.state("recipient_update/artist-a/update-1")
    assert (update["status"], update["from_version"], update["version"], update["old_address"],
            update["payout_address"], update["requested_by"]) == ("pending", 1, 2, old_address, NEW_ADDRESS, FINANCE)
    assert payouts.state("recipient/artist-a")["payout_address"] == old_address
    payouts.rejects(ErrorCode.FOUR_EYES_REQUIRED, lambda: decide(payouts, "approve", actor=FINANCE))
    payouts.rejects(ErrorCode.INVALID_REFERENCE, lambda: decide(payouts, "approve", payout_address=old_address))
    assert decide(payouts, "approve").accepted
    assert payouts.state("recipient/artist-a") == {"recipient_id": "artist-a", "payout_address": NEW_ADDRESS,
                                                   "version": 2}
    assert payouts.state("recipient_update/artist-a/update-1")["decision"]["decided_by"] == FINANCE_2
    payouts.rejects(ErrorCode.INVALID_STATE, lambda: decide(payouts, "approve"))


def test_requests_name_listed_evidence_and_the_next_version(payouts: PayoutWorld):
    payouts.rejects(ErrorCode.INVALID_REFERENCE, lambda: request(payouts, listed=False))
    payouts.rejects(ErrorCode.STALE_REVISION, lambda: request(payouts, version=3))
    same = payouts.state("recipient/artist-a")["payout_address"]
    payouts.rejects(ErrorCode.INVALID_STATE, lambda: request(payouts, address=same))
    payouts.rejects(ErrorCode.CAPABILITY_MISSING, lambda: request(payouts, actor="signer-1"))
    assert request(payouts).accepted
    payouts.rejects(ErrorCode.INVALID_STATE, lambda: request(payouts, "update-2"))  # one pending at a time
    payouts.rejects(ErrorCode.NOT_FOUND, lambda: decide(payouts, "approve", "update-9"))


def test_a_request_holds_payments_and_a_decline_resumes_them(payouts: PayoutWorld):
    plan = {"artist-a": payouts.payable_line_ids("artist-a")}
    assert payouts.prepare("run-1", plan).accepted
    statements = payouts.confirmed_statements(plan)
    assert payouts.approve("run-1", statements).accepted
    held = request(payouts)
    assert held.result["data"]["held_payment_ids"] == ["run-1.artist-a"]
    assert payouts.state("payment/run-1.artist-a")["state"] == "held"
    assert payouts.claim("run-1.artist-a.effect").accepted
    payouts.rejects(ErrorCode.INVALID_STATE, lambda: payouts.sign("run-1.artist-a", "attempt-1"))
    assert decide(payouts, "decline", reason="evidence_insufficient").accepted
    assert payouts.state("payment/run-1.artist-a")["state"] == "approved"
    assert payouts.state("recipient/artist-a")["version"] == 1
    assert payouts.sign("run-1.artist-a", "attempt-1").accepted


def test_a_pending_request_blocks_approval_of_runs_paying_the_recipient(payouts: PayoutWorld):
    plan = {"artist-a": payouts.payable_line_ids("artist-a")}
    assert payouts.prepare("run-1", plan).accepted
    statements = payouts.confirmed_statements(plan)
    assert request(payouts).accepted
    payouts.rejects(ErrorCode.INVALID_STATE, lambda: payouts.approve("run-1", statements))


def test_approval_moves_unsigned_payments_to_the_new_address_under_new_runs(payouts: PayoutWorld):
    a_lines, b_lines = payouts.payable_line_ids("artist-a"), payouts.payable_line_ids("artist-b")
    signed_plan = {"artist-a": a_lines[:1], "artist-b": b_lines[:1]}
    assert payouts.prepare("run-signed", signed_plan).accepted
    assert payouts.approve("run-signed", payouts.confirmed_statements(signed_plan)).accepted
    assert payouts.claim("run-signed.artist-a.effect").accepted
    assert payouts.sign("run-signed.artist-a", "attempt-1").accepted
    approved_plan = {"artist-a": a_lines[1:2]}
    assert payouts.prepare("run-approved", approved_plan).accepted
    assert payouts.approve("run-approved", payouts.confirmed_statements(approved_plan)).accepted
    assert payouts.prepare("run-prepared", {"artist-a": a_lines[2:], "artist-b": b_lines[1:]}).accepted
    attempt_before = payouts.state("payment_attempt/attempt-1")

    assert request(payouts).accepted
    outcome = decide(payouts, "approve")
    assert outcome.accepted, outcome.result
    data = outcome.result["data"]
    assert data["invalidated_run_ids"] == ["run-prepared"]
    assert data["cancelled_payment_ids"] == ["run-approved.artist-a", "run-prepared.artist-a", "run-prepared.artist-b"]
    again_approved, again_prepared = (successor_id("run", run, "update-1") for run in ("run-approved", "run-prepared"))
    assert data["prepared_run_ids"] == sorted([again_approved, again_prepared])
    prepared = payouts.state("payment_run/run-prepared")
    assert (prepared["status"], prepared["tombstone"]["reason"]) == ("invalidated", "recipient_updated")
    assert payouts.state("payment/run-approved.artist-a")["state"] == "cancelled"
    assert payouts.owner.get(OUTBOX, "run-approved.artist-a.effect").data["status"] == "cancelled"

    # Each unsigned payment is prepared again at the new address version, and needs approval again.
    for old_run, new_run, recipients in ((("run-approved", again_approved, ["artist-a"])),
                                         ("run-prepared", again_prepared, ["artist-a", "artist-b"])):
        run = payouts.state(f"payment_run/{new_run}")
        assert (run["status"], run["prepared_by"], run["supersedes"]["run_id"]) == ("prepared", FINANCE_2, old_run)
        assert run["correlation_id"] == f"payout_run:{old_run}"
        moved = {p["recipient_id"]: p for p in run["frozen"]["payments"]}
        assert sorted(moved) == recipients
        assert (moved["artist-a"]["recipient_version"], moved["artist-a"]["payout_address"]) == (2, NEW_ADDRESS)
        old_payment = payouts.state(f"payment/{old_run}.artist-a")
        assert old_payment["superseded_by"] == moved["artist-a"]["payment_id"]
    assert payouts.state(f"allocation_line/{a_lines[1]}")["status"] == "payable"
    statements = payouts.confirmed_statements(approved_plan)
    payouts.rejects(ErrorCode.FOUR_EYES_REQUIRED, lambda: payouts.approve(again_approved, statements, actor=FINANCE_2))
    assert payouts.approve(again_approved, statements, actor=FINANCE).accepted

    # The signed attempt, its payment and the other recipient's payment are exactly as they were.
    assert payouts.state("payment_attempt/attempt-1") == attempt_before
    assert payouts.state("payment/run-signed.artist-a")["state"] == "signed"
    assert payouts.state("payment/run-signed.artist-b")["state"] == "approved"
    assert payout_problems(payouts.owner) == []


def test_nobody_who_chose_an_unapproved_runs_content_approves_it_once_prepared_again(payouts: PayoutWorld):
    """Otherwise an address change would launder a run its own preparer then approves, reviewed by no one."""
    plan = {"artist-a": payouts.payable_line_ids("artist-a")}
    assert payouts.prepare("run-1", plan, actor=FINANCE).accepted
    statements = payouts.confirmed_statements(plan)
    assert payouts.owner.submit(payouts.money.envelopes.account("fin-3", roles=["finance"])).accepted
    assert request(payouts, actor="fin-3").accepted
    assert decide(payouts, "approve", actor=FINANCE_2).accepted
    successor = successor_id("run", "run-1", "update-1")
    assert payouts.state(f"payment_run/{successor}")["supersedes"]["unapproved_preparers"] == [FINANCE]
    for actor in (FINANCE, FINANCE_2):
        payouts.rejects(ErrorCode.FOUR_EYES_REQUIRED, lambda: payouts.approve(successor, statements, actor=actor))
    assert payouts.approve(successor, statements, actor="fin-3").accepted


def test_an_update_id_names_one_update_in_the_whole_ledger(payouts: PayoutWorld):
    """Successor runs are named by (run, update ID): two recipients' updates under one ID would collide there,
    leaving the second failed transfer unrecordable."""
    assert request(payouts, "u-1").accepted
    evidence = digest("ownership", "u-1", "artist-b")
    step = {"action": "request", "version": 2, "payout_address": payloads.address("artist-b-new"),
            "evidence_digest": evidence}
    payouts.rejects(ErrorCode.ALREADY_EXISTS, lambda: payouts.submit(
        "UpdateRecipient", {"update_id": "u-1", "recipient_id": "artist-b", "step": step}, actor=FINANCE,
        evidence=[evidence]))


def claimed_run(payouts: PayoutWorld, *, signed: bool) -> None:
    """run-1 pays artist-a, approved, its effect claimed; with ``signed``, attempt-1 is recorded."""
    plan = {"artist-a": payouts.payable_line_ids("artist-a")}
    assert payouts.prepare("run-1", plan).accepted
    assert payouts.approve("run-1", payouts.confirmed_statements(plan)).accepted
    assert payouts.claim("run-1.artist-a.effect").accepted
    if signed:
        assert payouts.sign("run-1.artist-a", "attempt-1").accepted


def test_attack_2_a_payment_failing_while_an_update_is_pending_is_held(payouts: PayoutWorld):
    """The failed payment was re-signed and confirmed to the old address while the change was pending."""
    claimed_run(payouts, signed=True)
    assert request(payouts).accepted
    assert payouts.state("payment/run-1.artist-a")["state"] == "signed"  # a signed attempt is left alone

    assert payouts.observe("attempt-1", "expired").accepted
    payment = payouts.state("payment/run-1.artist-a")
    assert (payment["state"], payment["held_from"], payment["held_for"]) == (
        "held", "failed", {"reason": "recipient_update_pending", "update_id": "update-1"})
    assert payouts.index("payment_by_state/held/run-1.artist-a")["held_for"]["update_id"] == "update-1"
    assert payouts.claim("run-1.artist-a.effect").accepted
    payouts.rejects(ErrorCode.INVALID_STATE, lambda: payouts.sign("run-1.artist-a", "attempt-2"))
    assert decide(payouts, "decline", reason="evidence_insufficient").accepted
    assert payouts.state("payment/run-1.artist-a")["state"] == "failed"
    assert payouts.sign("run-1.artist-a", "attempt-2").accepted  # declined: the old address stands


def test_attack_2_a_payment_failing_after_the_update_moves_to_the_new_address(payouts: PayoutWorld):
    claimed_run(payouts, signed=True)
    assert request(payouts).accepted
    assert decide(payouts, "approve").result["data"]["cancelled_payment_ids"] == []  # in flight: untouched

    assert payouts.observe("attempt-1", "failed").accepted
    old = payouts.state("payment/run-1.artist-a")
    assert (old["state"], old["cancel_reason"]) == ("cancelled", "recipient_updated")
    assert payouts.owner.get(OUTBOX, "run-1.artist-a.effect").data["status"] == "cancelled"
    payouts.rejects(ErrorCode.INVALID_STATE, lambda: payouts.sign("run-1.artist-a", "attempt-2"))
    new_run = payouts.state(f"payment_run/{successor_id('run', 'run-1', 'update-1')}")
    (moved,) = new_run["frozen"]["payments"]
    assert (moved["payment_id"], moved["payout_address"], new_run["status"]) == (old["superseded_by"], NEW_ADDRESS,
                                                                                  "prepared")
    assert {payouts.state(f"allocation_line/{line}")["status"] for line in moved["line_ids"]} == {"payable"}
    assert payout_problems(payouts.owner) == []


def test_nothing_new_is_signed_to_a_recipient_with_a_pending_update(payouts: PayoutWorld):
    claimed_run(payouts, signed=False)
    assert request(payouts).accepted
    refused = payouts.rejects(ErrorCode.INVALID_STATE, lambda: payouts.sign("run-1.artist-a", "attempt-1"))
    assert "update-1" in refused.result["detail"]


def test_malformed_steps_are_refused_before_admission(payouts: PayoutWorld):
    head = payouts.owner.head()
    for step in ({"action": "approve", "version": 2}, {"action": "rename"}, {"action": "decline", "reason": "bored"},
                 {"action": "request", "version": 2, "payout_address": "0xABC", "evidence_digest": "0" * 64}):
        with pytest.raises(LedgerError) as refused:
            payouts.submit("UpdateRecipient", {"update_id": "u", "recipient_id": "artist-a", "step": step}, actor=FINANCE)
        assert refused.value.code == ErrorCode.INVALID_PAYLOAD, step
    assert payouts.owner.head() == head
