"""PreparePayoutRun, ApprovePayoutRun, CancelPayoutRun: frozen content, four eyes, reservations once, tombstones."""

from __future__ import annotations

import hashlib

import pytest
import rfc8785

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.domain.commands.money.payout_runs import run_key
from ledger_engine.layout import EVENTS, OUTBOX, STATE
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from tests.money_allocation.world import FINANCE, FINANCE_2, FIRST_DAY, INGEST
from tests.money_payouts.oracle import payout_problems
from tests.money_payouts.world import LISTENER, NODES, RECIPIENTS, WORKS, PayoutWorld, transaction_hash

PLAN = {"artist-a": ["line-000000", "line-000001"], "operator-x": ["line-000005"]}


@pytest.fixture
def prepared(payouts: PayoutWorld) -> PayoutWorld:
    assert payouts.prepare("run-1", PLAN).accepted
    return payouts


@pytest.fixture
def approved(prepared: PayoutWorld) -> PayoutWorld:
    statements = prepared.confirmed_statements(PLAN)
    outcome = prepared.approve("run-1", statements)
    assert outcome.accepted, outcome.result
    return prepared


def postings_of(world: PayoutWorld, sequence: int) -> list[tuple[str, str, str, str]]:
    return [(event["journal"], line["account"], line["side"], line["amount"])
            for _, event in world.owner.scan(EVENTS, f"{sequence:020d}/") if event["type"] == "Posted"
            for line in event["lines"]]


def test_prepare_freezes_exact_content_under_the_documented_hash(payouts: PayoutWorld):
    outcome = payouts.prepare("run-1", PLAN)
    assert outcome.accepted, outcome.result
    run = payouts.state("payment_run/run-1")
    frozen = run["frozen"]
    assert run["run_hash"] == outcome.result["data"]["run_hash"] == \
        hashlib.sha256(b"porto:london:payout-run:v1\n" + rfc8785.dumps(frozen)).hexdigest()
    assert frozen == {"run_id": "run-1", "asset": "USDC", "total": "66750", "payments": [
        {"payment_id": "run-1.artist-a", "effect_id": "run-1.artist-a.effect", "recipient_id": "artist-a",
         "recipient_version": 1, "payout_address": payouts.state("recipient/artist-a")["payout_address"],
         "amount": "56250", "line_ids": ["line-000000", "line-000001"]},
        {"payment_id": "run-1.operator-x", "effect_id": "run-1.operator-x.effect", "recipient_id": "operator-x",
         "recipient_version": 1, "payout_address": payouts.state("recipient/operator-x")["payout_address"],
         "amount": "10500", "line_ids": ["line-000005"]},
    ]}
    assert (run["status"], run["prepared_by"], run["approval"], run["tombstone"]) == ("prepared", FINANCE, None, None)
    assert payouts.state("payment/run-1.artist-a")["state"] == "prepared"
    assert payouts.state("allocation_line/line-000000")["status"] == "payable"
    assert postings_of(payouts, outcome.sequence) == []
    assert payouts.owner.get(OUTBOX, "run-1.artist-a.effect") is None


def test_a_stated_hash_that_is_not_the_frozen_content_is_rejected(payouts: PayoutWorld):
    payouts.rejects(ErrorCode.RUN_HASH_MISMATCH, lambda: payouts.prepare("run-1", PLAN, run_hash="0" * 64))


@pytest.mark.parametrize("plan, code", [
    ({"artist-a": ["line-000007"]}, ErrorCode.ALREADY_PAID),  # Porto's retained share is paid at allocation
    ({"artist-a": ["line-000002"]}, ErrorCode.INVALID_REFERENCE),  # artist-b's line
    ({"artist-a": ["line-999999"]}, ErrorCode.NOT_FOUND),
    ({"nobody": ["line-000000"]}, ErrorCode.NOT_FOUND),
])
def test_prepare_takes_only_payable_lines_of_each_recipient(payouts: PayoutWorld, plan, code):
    payouts.rejects(code, lambda: payouts.prepare("run-1", plan))


def test_prepare_checks_amounts_versions_and_ids(payouts: PayoutWorld):
    payload = payouts.run_payload("run-1", PLAN)
    wrong_amount = {**payload, "payments": [{**payload["payments"][0], "amount": "1"}, payload["payments"][1]]}
    payouts.rejects(ErrorCode.INVALID_REFERENCE, lambda: payouts.submit("PreparePayoutRun", wrong_amount, actor=FINANCE))
    stale = {**payload, "payments": [{**payload["payments"][0], "recipient_version": 2}, payload["payments"][1]]}
    payouts.rejects(ErrorCode.STALE_REVISION, lambda: payouts.submit("PreparePayoutRun", stale, actor=FINANCE))
    assert payouts.prepare("run-1", PLAN).accepted
    payouts.rejects(ErrorCode.ALREADY_EXISTS, lambda: payouts.prepare("run-1", {"artist-b": ["line-000002"]}))
    reused_ids = {**payouts.run_payload("run-1", PLAN), "run_id": "run-2"}
    payouts.rejects(ErrorCode.ALREADY_EXISTS, lambda: payouts.submit("PreparePayoutRun", reused_ids, actor=FINANCE))


@pytest.mark.parametrize("change, code", [
    (lambda p: p["payments"].reverse(), ErrorCode.INVALID_PAYLOAD),  # payments out of ID order
    (lambda p: p["payments"][0]["line_ids"].reverse(), ErrorCode.INVALID_PAYLOAD),
    (lambda p: p["payments"][1]["line_ids"].append("line-000000"), ErrorCode.INVALID_PAYLOAD),  # a line twice
    (lambda p: p["payments"][1].update(effect_id=p["payments"][0]["effect_id"]), ErrorCode.INVALID_PAYLOAD),
    (lambda p: p["payments"][0].update(amount="0"), ErrorCode.INVALID_PAYLOAD),
    (lambda p: p["payments"][0].update(amount="-5"), ErrorCode.INVALID_AMOUNT),
    (lambda p: p.update(asset="GBP"), ErrorCode.INVALID_PAYLOAD),
    (lambda p: p.update(memo="x"), ErrorCode.UNKNOWN_FIELD),
])
def test_malformed_run_payloads_are_refused_before_admission(payouts: PayoutWorld, change, code):
    payload = payouts.run_payload("run-1", PLAN)
    change(payload)
    head = payouts.owner.head()
    with pytest.raises(LedgerError) as refused:
        payouts.submit("PreparePayoutRun", payload, actor=FINANCE)
    assert refused.value.code == code
    assert payouts.owner.head() == head


def test_approval_reserves_each_line_posts_and_queues_one_intent_per_payment(prepared: PayoutWorld):
    budget_before = prepared.state("budget/budget-1")
    statements = prepared.confirmed_statements(PLAN)
    outcome = prepared.approve("run-1", statements)
    assert outcome.accepted, outcome.result
    run = prepared.state("payment_run/run-1")
    assert (run["status"], run["approval"]["approved_by"], run["approval"]["statement_ids"]) == \
        ("approved", FINANCE_2, sorted(statements))
    for line_id, payment_id in (("line-000000", "run-1.artist-a"), ("line-000001", "run-1.artist-a"),
                                ("line-000005", "run-1.operator-x")):
        line = prepared.state(f"allocation_line/{line_id}")
        assert (line["status"], line["run_id"], line["payment_id"]) == ("reserved", "run-1", payment_id)
    assert postings_of(prepared, outcome.sequence) == [
        ("payment:run-1.artist-a:reserve", "artist_payable:artist-a", "debit", "56250"),
        ("payment:run-1.artist-a:reserve", "reserved_payouts:artist-a", "credit", "56250"),
        ("payment:run-1.operator-x:reserve", "operator_payable:operator-x", "debit", "10500"),
        ("payment:run-1.operator-x:reserve", "reserved_payouts:operator-x", "credit", "10500"),
    ]
    effects = {key: value["data"] for key, value in prepared.owner.scan(OUTBOX)
               if value["data"]["kind"] == "payment.transfer"}
    assert sorted(effects) == ["run-1.artist-a.effect", "run-1.operator-x.effect"]
    assert effects["run-1.artist-a.effect"]["payload"] == {
        "payment_id": "run-1.artist-a", "run_id": "run-1", "recipient_id": "artist-a", "asset": "USDC",
        "payout_address": prepared.state("recipient/artist-a")["payout_address"], "amount": "56250"}
    assert all(effect["status"] == "pending" for effect in effects.values())
    # Reservations subdivide outstanding allocations: no budget term moves.
    assert prepared.state("budget/budget-1") == budget_before
    assert payout_problems(prepared.owner) == []


def test_four_eyes_the_preparer_cannot_approve(prepared: PayoutWorld):
    statements = prepared.confirmed_statements(PLAN)
    prepared.rejects(ErrorCode.FOUR_EYES_REQUIRED, lambda: prepared.approve("run-1", statements, actor=FINANCE))
    prepared.rejects(ErrorCode.CAPABILITY_MISSING, lambda: prepared.approve("run-1", statements, actor=INGEST))


def test_approval_names_the_exact_frozen_hash(prepared: PayoutWorld):
    statements = prepared.confirmed_statements(PLAN)
    prepared.rejects(ErrorCode.RUN_HASH_MISMATCH, lambda: prepared.approve("run-1", statements, stated_hash="a" * 64))


def test_approval_needs_confirmed_statements_for_exactly_the_run_recipients(prepared: PayoutWorld):
    unconfirmed = prepared.confirmed_statements(PLAN, confirm=False)
    prepared.rejects(ErrorCode.INVALID_STATE, lambda: prepared.approve("run-1", unconfirmed))
    too_few = prepared.confirmed_statements(["artist-a"])
    prepared.rejects(ErrorCode.INVALID_REFERENCE, lambda: prepared.approve("run-1", too_few))
    too_many = prepared.confirmed_statements(["artist-a", "artist-b", "operator-x"])
    prepared.rejects(ErrorCode.INVALID_REFERENCE, lambda: prepared.approve("run-1", too_many))
    prepared.rejects(ErrorCode.NOT_FOUND, lambda: prepared.approve("run-1", ["statement-none"]))
    assert prepared.approve("run-1", [s for s in too_many if not s.endswith("artist-b")]).accepted


def test_attack_6_statements_must_cover_every_line_of_the_run(payouts: PayoutWorld):
    """A run was approved on statements frozen before its lines existed."""
    early = payouts.confirmed_statements(["artist-a"])
    day = FIRST_DAY + 5
    payouts.money.closed_day(LISTENER, day, "period-1", WORKS, NODES)
    assert payouts.money.allocate(LISTENER, day, "budget-1").accepted
    plan = {"artist-a": payouts.payable_line_ids("artist-a")}
    assert payouts.prepare("run-late", plan).accepted
    refused = payouts.rejects(ErrorCode.INVALID_REFERENCE, lambda: payouts.approve("run-late", early))
    assert "no confirmed statement" in refused.result["detail"]
    first_day_only = payouts.confirmed_statements(["artist-a"], window_end_ms=(FIRST_DAY + 1) * DAY_MS)
    payouts.rejects(ErrorCode.INVALID_REFERENCE, lambda: payouts.approve("run-late", first_day_only))
    assert payouts.approve("run-late", payouts.confirmed_statements(["artist-a"])).accepted


def test_each_contribution_is_reserved_once(approved: PayoutWorld):
    approved.rejects(ErrorCode.ALREADY_RESERVED,
                     lambda: approved.prepare("run-2", {"artist-a": ["line-000001", "line-000008"]}))
    statements = approved.confirmed_statements(PLAN)
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.approve("run-1", statements))


def test_overlapping_prepared_runs_cannot_both_be_approved(payouts: PayoutWorld):
    assert payouts.prepare("run-1", PLAN).accepted
    assert payouts.prepare("run-2", {"artist-a": ["line-000001"]}).accepted
    assert payouts.approve("run-1", payouts.confirmed_statements(PLAN)).accepted
    statements = payouts.confirmed_statements(["artist-a"])
    payouts.rejects(ErrorCode.ALREADY_RESERVED, lambda: payouts.approve("run-2", statements))


def test_blocked_payouts_stop_approval(prepared: PayoutWorld):
    statements = prepared.confirmed_statements(PLAN)
    prepared.money.submit_ok("TestForgeRecord", {"record_key": "budget/budget-1", "changes": {"paid": "1"}})
    assert prepared.money.check("check-1").result["data"]["status"] == "blocked"
    prepared.rejects(ErrorCode.PAYOUTS_BLOCKED, lambda: prepared.approve("run-1", statements))


def test_cancelling_a_prepared_run_leaves_a_tombstone(prepared: PayoutWorld):
    prepared.rejects(ErrorCode.STALE_REVISION, lambda: prepared.submit(
        "CancelPayoutRun", {"run_id": "run-1", "reason": "superseded"}, actor=FINANCE))
    outcome = prepared.cancel("run-1", "superseded", actor=FINANCE_2)
    assert outcome.accepted, outcome.result
    run = prepared.state("payment_run/run-1")
    assert run["status"] == "cancelled"
    assert run["tombstone"] == {"ended_by": FINANCE_2, "ended_at_ms": prepared.now_ms, "reason": "superseded"}
    assert run["frozen"]["total"] == "66750"  # the frozen content stays, to be audited
    assert prepared.state("payment/run-1.artist-a")["state"] == "cancelled"
    assert postings_of(prepared, outcome.sequence) == []
    prepared.rejects(ErrorCode.INVALID_STATE, lambda: prepared.cancel("run-1"))
    statements = prepared.confirmed_statements(PLAN)
    prepared.rejects(ErrorCode.INVALID_STATE, lambda: prepared.approve("run-1", statements))


def test_cancelling_an_approved_run_releases_its_reservations(approved: PayoutWorld):
    outcome = approved.cancel("run-1", "amounts_disputed")
    assert outcome.accepted, outcome.result
    assert outcome.result["data"]["cancelled_payment_ids"] == ["run-1.artist-a", "run-1.operator-x"]
    line = approved.state("allocation_line/line-000000")
    assert (line["status"], line["run_id"], line["payment_id"]) == ("payable", None, None)
    assert postings_of(approved, outcome.sequence) == [
        ("payment:run-1.artist-a:release", "reserved_payouts:artist-a", "debit", "56250"),
        ("payment:run-1.artist-a:release", "artist_payable:artist-a", "credit", "56250"),
        ("payment:run-1.operator-x:release", "reserved_payouts:operator-x", "debit", "10500"),
        ("payment:run-1.operator-x:release", "operator_payable:operator-x", "credit", "10500"),
    ]
    effect = approved.owner.get(OUTBOX, "run-1.artist-a.effect").data
    assert (effect["status"], effect["result"]) == ("cancelled", {"cancelled": "amounts_disputed"})
    assert payout_problems(approved.owner) == []
    # The released lines can be paid by a new run.
    assert approved.prepare("run-2", PLAN).accepted


def test_cancel_is_refused_once_an_attempt_is_signed(approved: PayoutWorld):
    assert approved.claim("run-1.artist-a.effect").accepted
    assert approved.sign("run-1.artist-a", "attempt-1").accepted
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.cancel("run-1"))
    assert approved.complete("run-1.artist-a.effect", "unknown", transaction_hash("attempt-1")).accepted
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.cancel("run-1"))  # uncertain is not resolved either


def test_cancel_keeps_what_is_paid_and_releases_what_failed(approved: PayoutWorld):
    approved.pay("run-1.artist-a", "attempt-1")
    effect = "run-1.operator-x.effect"
    assert approved.claim(effect).accepted
    assert approved.sign("run-1.operator-x", "attempt-2").accepted
    assert approved.observe("attempt-2", "expired").accepted
    assert approved.state("payment/run-1.operator-x")["state"] == "failed"
    outcome = approved.cancel("run-1")
    assert outcome.result["data"]["cancelled_payment_ids"] == ["run-1.operator-x"]
    assert approved.state("payment/run-1.artist-a")["state"] == "confirmed"
    assert approved.state("allocation_line/line-000000")["status"] == "paid"
    assert approved.state("allocation_line/line-000005")["status"] == "payable"
    assert payout_problems(approved.owner) == []
    approved.rejects(ErrorCode.INVALID_STATE, lambda: approved.cancel("run-1"))


def test_a_whole_run_over_every_recipient_is_paid_once(payouts: PayoutWorld):
    assert payouts.prepare("run-1").accepted
    assert payouts.approve("run-1", payouts.confirmed_statements()).accepted
    for number, recipient in enumerate(RECIPIENTS):
        payouts.pay(f"run-1.{recipient}", f"attempt-{number}")
    assert all(payouts.payable_line_ids(recipient) == [] for recipient in RECIPIENTS)
    budget = payouts.state("budget/budget-1")
    assert (budget["outstanding"], budget["paid"]) == ("0", "200000")
    assert payout_problems(payouts.owner) == []


def test_an_approval_cap_is_enforced_by_the_ledger(prepared: PayoutWorld):
    statements = prepared.confirmed_statements(PLAN)
    total = int(prepared.state("payment_run/run-1")["frozen"]["total"])
    stated = prepared.state("payment_run/run-1")["run_hash"]

    def approve(cap: int):
        return prepared.submit("ApprovePayoutRun", {"run_id": "run-1", "run_hash": stated, "statement_ids": statements,
                                                    "cap": str(cap)}, actor=FINANCE_2, step_up=True)

    refused = prepared.rejects(ErrorCode.APPROVAL_CAP_EXCEEDED, lambda: approve(total - 1))
    assert str(total) in refused.result["detail"]
    assert approve(total).accepted
    assert prepared.state("payment_run/run-1")["approval"]["cap"] == str(total)


def test_signing_holds_a_run_to_its_cap(prepared: PayoutWorld):
    statements = prepared.confirmed_statements(PLAN)
    run = prepared.state("payment_run/run-1")
    assert prepared.submit("ApprovePayoutRun", {"run_id": "run-1", "run_hash": run["run_hash"],
                                                "statement_ids": statements, "cap": run["frozen"]["total"]},
                           actor=FINANCE_2, step_up=True).accepted
    first, second = run["frozen"]["payments"]
    prepared.pay(first["payment_id"], "attempt-1")
    # A forged payment amount (a disk that lies) cannot take the run past what was approved.
    prepared.money.submit_ok("TestForgeRecord", {"record_key": f"payment/{second['payment_id']}",
                                                 "changes": {"amount": run["frozen"]["total"]}})
    assert prepared.claim(second["effect_id"]).accepted
    prepared.rejects(ErrorCode.APPROVAL_CAP_EXCEEDED, lambda: prepared.sign(
        second["payment_id"], "attempt-2", amount=run["frozen"]["total"]))


def test_a_line_held_for_a_correction_is_not_paid_out(payouts: PayoutWorld):
    held, *rest = payouts.payable_line_ids("artist-a")
    assert payouts.money.request_correction("fix-1", "budget-1", reason="allocation_error", reverses=[held]).accepted
    assert payouts.index(f"payable_line/artist-a/{held}") is None
    refused = payouts.rejects(ErrorCode.INVALID_STATE, lambda: payouts.prepare("run-held", {"artist-a": [held]}))
    assert "fix-1" in refused.result["detail"]
    assert payouts.prepare("run-rest", {"artist-a": rest}).accepted
    assert payouts.money.decide_correction("fix-1", "decline", decline_reason="requested_in_error").accepted
    assert payouts.prepare("run-held", {"artist-a": [held]}).accepted


def test_a_cancel_may_carry_a_note_digest_kept_on_the_tombstone(prepared: PayoutWorld):
    note = "ab" * 32
    outcome = prepared.submit("CancelPayoutRun", {"run_id": "run-1", "reason": "amounts_disputed", "note_digest": note},
                              actor=FINANCE, expected=[prepared.revision(STATE, run_key("run-1"))])
    assert outcome.accepted, outcome.result
    assert prepared.state("payment_run/run-1")["tombstone"]["note_digest"] == note
    events = [event for _, event in prepared.owner.scan("events", f"{outcome.sequence:020d}/")]
    assert [event["note_digest"] for event in events if event["type"] == "PayoutRunEnded"] == [note]
