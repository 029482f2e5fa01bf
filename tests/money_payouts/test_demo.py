"""The demo's payout stage, run against a ledger: every envelope accepted, every payout command exercised."""

from __future__ import annotations

from collections import Counter

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo import demo_genesis
from ledger_engine.demo.builder import DAY_MS, DemoBuilder
from ledger_engine.demo.foundation import build_foundation
from ledger_engine.demo.money import Allocation, PayableLine
from ledger_engine.demo.payouts import UNPAID, build_payouts
from ledger_engine.layout import OUTBOX, STATE
from ledger_engine.selectors.money_queries import allocation_plan
from tests.money_allocation.world import FIRST_DAY, fixture_commands, funding
from tests.money_payouts.oracle import payout_problems
from tests.support import payloads

PAYOUT_COMMANDS = {"UpdateRecipient", "PreparePayoutRun", "ApprovePayoutRun", "CancelPayoutRun", "RecordSignedAttempt",
                   "RecordTransferObservation", "FreezeArtifact", "RecordCommitmentObservation", "ClaimEffect",
                   "CompleteEffect"}
LISTENER = "demo-listener-00000"


def submit_all(owner, envelopes) -> Counter:
    accepted = Counter()
    for envelope in envelopes:
        outcome = owner.submit(envelope)
        assert outcome.accepted, (envelope["command_type"], outcome.result)
        accepted[envelope["command_type"]] += 1
    return accepted


def allocated_lines(owner, envelopes, builder, cast, days: int) -> Allocation:
    """Allocate ``days`` listener-days through AllocateListenerDay; periods and closed days are fixtures.

    The envelopes follow the builder's clock, and the builder then follows theirs: one admission clock.
    """
    envelopes.advance_to(builder.clock_ms)
    with fixture_commands():
        start = FIRST_DAY * DAY_MS
        works = [{"work_id": work["work_id"], "rights_version": 1, "listened_ms": 10_000 * (n + 1)}
                 for n, work in enumerate(cast.works[:4])]
        assert owner.submit(envelopes("TestStreamingRecords", {
            "periods": [{"period_id": "period-1", "account_id": LISTENER, "start_ms": start,
                         "end_ms": start + 30 * DAY_MS, "days": 30}],
            "days": [{"listener_id": LISTENER, "day": FIRST_DAY + day, "period_id": "period-1", "works": works}
                     for day in range(days)]})).accepted
    deposit = {**payloads.funding("lot-payouts", "3000000"), "budgets": [funding("budget-1", "period-1", {"lot-payouts": 3_000_000})]}
    assert owner.submit(envelopes("ImportFunding", deposit, actor="demo-ingest",
                                  evidence=[payloads.deposit_evidence(deposit)])).accepted
    for day in range(FIRST_DAY, FIRST_DAY + days):
        plan = allocation_plan(owner.view(), LISTENER, day, "budget-1")
        assert owner.submit(envelopes("AllocateListenerDay", {
            "listener_id": LISTENER, "day": day, "budget_id": "budget-1",
            "line_ids": [f"line-{day}-{n}" for n in range(len(plan.lines))]},
            actor="demo-finance-1", expected=plan.expected_revisions())).accepted
    lines = [value["data"] for _, value in owner.scan(STATE, "allocation_line/", limit=10_000)]
    builder.advance_to(envelopes.clock_ms)
    return Allocation(payable=[PayableLine(line["line_id"], line["recipient_id"], line["role"], int(line["amount"]),
                                           line["budget_id"], line["listener_id"], line["day"])
                               for line in lines if line["status"] == "payable"])


@pytest.fixture
def owner(tmp_path):
    """The demo's approvals carry proofs from the demo's step-up key, which the demo genesis trusts."""
    with LedgerOwner.open(tmp_path / "demo-ledger", genesis=demo_genesis()) as ledger:
        yield ledger


@pytest.fixture
def paid_demo(owner, envelopes):
    builder = DemoBuilder(7)
    cast = build_foundation(builder, listeners=2, days=2)
    submit_all(owner, builder.envelopes)
    allocation = allocated_lines(owner, envelopes, builder, cast, days=2)
    first_payout = len(builder.envelopes)
    builder.advance_to(owner.admission_floor_ms())  # the allocation above ran on the test's clock
    build_payouts(builder, cast, allocation)
    return owner, submit_all(owner, builder.envelopes[first_payout:]), allocation


def test_the_payout_stage_exercises_every_payout_command(paid_demo):
    owner, accepted, _ = paid_demo
    assert set(accepted) == PAYOUT_COMMANDS
    assert payout_problems(owner) == []


def test_the_payout_stage_leaves_each_kind_of_history(paid_demo):
    owner, _, allocation = paid_demo
    runs = [value["data"] for _, value in owner.scan(STATE, "payment_run/")]
    assert Counter(run["status"] for run in runs) == {"invalidated": 1, "cancelled": 1, "approved": 2, "prepared": 1}
    invalidated = next(run for run in runs if run["status"] == "invalidated")
    readdressed = next(run for run in runs if run["supersedes"] is not None)
    assert readdressed["supersedes"]["run_id"] == invalidated["run_id"]
    assert (readdressed["prepared_by"], readdressed["approval"]["approved_by"]) == ("demo-finance-2", "demo-finance-3")
    assert readdressed["correlation_id"] == invalidated["correlation_id"] == f"payout_run:{invalidated['run_id']}"
    approved = next(run for run in runs if run["status"] == "approved" and run["supersedes"] is None)
    waiting = next(run for run in runs if run["status"] == "prepared")
    assert (approved["prepared_by"], approved["approval"]["approved_by"]) == ("demo-finance-1", "demo-finance-2")
    assert waiting["prepared_by"] == "demo-finance-1"  # left for a person to approve in the console
    payments = [owner.get(STATE, f"payment/{p['payment_id']}").data
                for run in (readdressed, approved) for p in run["frozen"]["payments"]]
    recipients = {line.recipient_id for line in allocation.payable}
    waiting_for = {p["recipient_id"] for p in waiting["frozen"]["payments"]}
    in_no_run = recipients - {p["recipient_id"] for p in payments} - waiting_for  # left for a person to prepare
    assert len(waiting_for) == 1 and len(payments) >= 3
    assert len(in_no_run) == (UNPAID if len(recipients) > UNPAID + 4 else 0)
    assert {line.recipient_id for line in allocation.payable if line.recipient_id in in_no_run} == in_no_run
    states = Counter(payment["state"] for payment in payments)
    assert states == {"confirmed": len(payments) - 1, "approved": 1}
    assert sorted(len(payment["attempt_ids"]) for payment in payments)[-1] == 2  # failed, then retried
    queued = next(payment for payment in payments if payment["state"] == "approved")
    assert owner.get(OUTBOX, queued["effect_id"]).data["status"] == "pending"
    assert any(value["data"]["version"] == 2 for _, value in owner.scan(STATE, "recipient/"))
    batches = Counter((value["data"]["kind"], value["data"]["state"]) for _, value in owner.scan(STATE, "batch/"))
    assert batches == {("allocation", "confirmed"): 1, ("statement_index", "confirmed"): 1,
                       ("statement_index", "abandoned"): 1}
