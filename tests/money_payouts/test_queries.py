"""Console reads over the payout projections, and the projections rebuilt byte for byte."""

from __future__ import annotations

import pytest

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.selectors import payout_queries as queries
from ledger_engine.projections.payouts import PayoutsProjection
from ledger_engine.projections.rebuild import indexes_digest, rebuild_indexes
from tests.money_allocation.world import FINANCE, FINANCE_2
from tests.money_payouts.world import PAYMENT, SENDER, PayoutWorld, digest, transaction_hash
from tests.support import payloads

NEW_ADDRESS = payloads.address("artist-b-new")


@pytest.fixture
def busy(payouts: PayoutWorld) -> PayoutWorld:
    """A prepared run, and an approved one whose payments are confirmed, uncertain and signed."""
    plan = {recipient: payouts.payable_line_ids(recipient) for recipient in ("artist-a", "artist-b", "artist-c")}
    assert payouts.prepare("run-1", plan).accepted
    assert payouts.approve("run-1", payouts.confirmed_statements(plan)).accepted
    payouts.pay("run-1.artist-a", "attempt-a")
    assert payouts.claim("run-1.artist-b.effect").accepted
    assert payouts.sign("run-1.artist-b", "attempt-b").accepted
    assert payouts.complete("run-1.artist-b.effect", "unknown", transaction_hash("attempt-b")).accepted
    assert payouts.claim("run-1.artist-c.effect").accepted
    assert payouts.sign("run-1.artist-c", "attempt-c").accepted
    assert payouts.prepare("run-2", {"operator-x": payouts.payable_line_ids("operator-x")}).accepted
    return payouts


def test_runs_awaiting_approval_show_hash_total_and_preparer(busy: PayoutWorld):
    view = busy.owner.view()
    assert view.sequence == busy.owner.head().sequence
    assert list(queries.runs(view, "prepared")) == [queries.RunListing(
        run_id="run-2", status="prepared", run_hash=busy.state("payment_run/run-2")["run_hash"], total="21000",
        payments=1, prepared_by=FINANCE, prepared_at_ms=busy.state("payment_run/run-2")["prepared_at_ms"])]


def test_run_detail_has_lines_totals_and_a_rechecked_hash(busy: PayoutWorld):
    detail = queries.run_detail(busy.owner.view(), "run-1")
    assert (detail["status"], detail["run_hash_verified"], detail["total"]) == ("approved", True, "150000")
    assert detail["approval"]["approved_by"] == FINANCE_2
    assert detail["totals_by_state"] == {"confirmed": "112500", "signed": "10000", "uncertain": "27500"}
    artist_a = detail["payments"][0]
    assert (artist_a["payment_id"], artist_a["state"], artist_a["paid_attempt_id"], artist_a["lines_total"]) == \
        ("run-1.artist-a", "confirmed", "attempt-a", "112500")
    assert [(line["line_id"], line["role"], line["status"]) for line in artist_a["lines"]] == [
        ("line-000000", "artist", "paid"), ("line-000001", "artist", "paid"),
        ("line-000008", "artist", "paid"), ("line-000009", "artist", "paid")]
    with pytest.raises(LedgerError) as missing:
        queries.run_detail(busy.owner.view(), "run-9")
    assert missing.value.code == ErrorCode.NOT_FOUND


def test_payments_by_state(busy: PayoutWorld):
    assert [p.payment_id for p in queries.payments(busy.owner.view(), "prepared")] == ["run-2.operator-x"]
    assert list(queries.payments(busy.owner.view(), "confirmed")) == [queries.PaymentListing(
        payment_id="run-1.artist-a", state="confirmed", run_id="run-1", recipient_id="artist-a", amount="112500",
        held_for=None)]


def test_the_reconciliation_queue_says_what_to_look_up(busy: PayoutWorld):
    queue = queries.reconciliation_queue(busy.owner.view())
    assert [(item.payment_id, item.state) for item in queue] == [("run-1.artist-b", "uncertain"),
                                                                ("run-1.artist-c", "signed")]
    observe = queue[0].observe
    assert {name: observe[name] for name in ("attempt_id", "transaction_hash", "sender_address", "outcome")} == {
        "attempt_id": "attempt-b", "transaction_hash": transaction_hash("attempt-b"), "sender_address": SENDER,
        "outcome": "pending"}
    assert queue[0].effect["status"] == "done"
    assert queue[1].effect["claim"]["worker_id"] == "dispatcher-1"
    assert busy.observe("attempt-b", "confirmed").accepted
    assert [item.payment_id for item in queries.reconciliation_queue(busy.owner.view())] == ["run-1.artist-c"]


def test_payments_still_in_flight_ten_minutes_past_their_expiry_are_counted_as_overdue(busy: PayoutWorld):
    uncertain, signed = (busy.state(f"payment_attempt/{attempt}")["expires_at_ms"]
                         for attempt in ("attempt-b", "attempt-c"))
    view = busy.owner.view()
    assert queries.overdue_payments(view, min(uncertain, signed)) == 0
    assert queries.overdue_payments(view, uncertain + queries.OVERDUE_AFTER_MS + 1) == 1
    assert queries.overdue_payments(view, max(uncertain, signed) + queries.OVERDUE_AFTER_MS + 1) == 2
    assert busy.observe("attempt-b", "confirmed").accepted  # settled: no longer in flight
    assert queries.overdue_payments(busy.owner.view(), max(uncertain, signed) + queries.OVERDUE_AFTER_MS + 1) == 1


def test_recipient_updates_awaiting_approval_show_both_addresses(busy: PayoutWorld):
    evidence = digest("ownership", "u-1")
    step = {"action": "request", "version": 2, "payout_address": NEW_ADDRESS, "evidence_digest": evidence}
    assert busy.submit("UpdateRecipient", {"update_id": "u-1", "recipient_id": "artist-b", "step": step},
                       actor=FINANCE, evidence=[evidence]).accepted
    updates = queries.recipient_updates(busy.owner.view(), "pending")
    assert [(u.recipient_id, u.update_id, u.old_address, u.payout_address, u.requested_by) for u in updates] == [("artist-b", "u-1", payloads.address("artist-b"), NEW_ADDRESS, FINANCE)]


def test_the_outbox_backlog_counts_effects_by_status_and_kind(busy: PayoutWorld):
    backlog = queries.outbox_backlog(busy.owner.view())
    assert backlog["done"] == {"batch.anchor": 2, "payment.transfer": 2}
    assert backlog["claimed"] == {"payment.transfer": 1}


def test_paid_totals_fold_the_paid_memo(busy: PayoutWorld):
    assert busy.index("paid_total/USDC/artist-a") == {"amount": "112500", "payments": 1}
    assert busy.index("paid_total/USDC/artist-b") is None


def test_rebuilt_indexes_equal_the_maintained_ones(busy: PayoutWorld):
    maintained = busy.owner.at_boundary(indexes_digest)
    assert busy.owner.at_boundary(rebuild_indexes) == maintained


def test_record_entries_are_a_pure_function_of_one_record():
    projection = PayoutsProjection()
    update = {"recipient_id": "r", "update_id": "u", "status": "declined", "old_address": "a", "payout_address": "b",
              "version": 2, "requested_by": "f", "requested_at_ms": 5}
    assert list(projection.record_entries("state", "recipient_update/r/u", update)) == [
        ("recipient_update_by_status/declined/r/u",
         {"old_address": "a", "payout_address": "b", "version": 2, "requested_by": "f", "requested_at_ms": 5})]
    assert list(projection.record_entries("state", "recipient/r", {"recipient_id": "r"})) == []
    assert list(projection.record_entries("outbox", "payment/x", {})) == []


def test_attack_8_a_cancelled_run_that_paid_someone_says_so(approved: PayoutWorld):
    world = approved
    world.pay(PAYMENT, "attempt-1")
    assert world.cancel("run-1", "superseded").accepted
    detail = queries.run_detail(world.owner.view(), "run-1")
    assert detail["status"] == "cancelled"
    assert detail["aggregate"]["state"] == "cancelled_with_confirmed_payments"
    assert detail["aggregate"]["payments_by_state"] == {"cancelled": 1, "confirmed": 1}
    assert queries.run_aggregates(world.owner.view(), ["run-1"])["run-1"] == detail["aggregate"]


def test_attack_8_an_approved_run_whose_payments_an_address_change_cancelled_says_so(approved: PayoutWorld):
    world = approved
    evidence = digest("ownership", "update-1")
    assert world.submit("UpdateRecipient", {"update_id": "update-1", "recipient_id": "artist-a", "step": {
        "action": "request", "version": 2, "payout_address": payloads.address("new"), "evidence_digest": evidence}},
        actor=FINANCE, evidence=[evidence]).accepted
    assert world.submit("UpdateRecipient", {"update_id": "update-1", "recipient_id": "artist-a", "step": {
        "action": "approve", "version": 2, "payout_address": payloads.address("new")}}, actor=FINANCE_2, step_up=True).accepted
    aggregate = queries.run_aggregates(world.owner.view(), ["run-1"])["run-1"]
    assert (world.state("payment_run/run-1")["status"], aggregate["state"]) == ("approved",
                                                                                "approved_with_cancelled_payments")
    assert "recipient_updated" in aggregate["summary"]
    world.pay("run-1.artist-b", "attempt-b")
    assert queries.run_detail(world.owner.view(), "run-1")["aggregate"]["state"] == "partially_paid"


@pytest.mark.parametrize("status, states, expected", [
    ("prepared", ["prepared", "prepared"], "prepared"),
    ("approved", ["approved", "approved"], "approved"),
    ("approved", ["signed", "approved"], "paying"),
    ("approved", ["confirmed", "confirmed"], "paid"),
    ("invalidated", ["cancelled"], "invalidated"),
    ("cancelled", ["cancelled", "cancelled"], "cancelled"),
])
def test_aggregate_states(status, states, expected):
    assert queries.aggregate_state(status, [(state, None) for state in states])["state"] == expected
