"""The console shows a run's true aggregate state, and why a payment is held."""

from __future__ import annotations

from porto_console.console.handles import seal
from tests.money_allocation.world import FINANCE, FINANCE_2
from tests.money_payouts.world import digest
from tests.support import payloads


def approved_run(world) -> dict:
    plan = {"artist-a": world.payable_line_ids("artist-a"), "artist-b": world.payable_line_ids("artist-b")}
    assert world.prepare("run-1", plan).accepted
    assert world.approve("run-1", world.confirmed_statements(plan)).accepted
    return plan


def test_a_cancelled_run_that_paid_someone_shows_it(finance, payouts_world):
    approved_run(payouts_world)
    payouts_world.pay("run-1.artist-a", "attempt-1")
    assert payouts_world.cancel("run-1", "superseded").accepted
    listed = finance[FINANCE].get("/ledger/payouts/?status=cancelled").content.decode()
    assert "cancelled_with_confirmed_payments" in listed
    page = finance[FINANCE].get(f"/ledger/payouts/{seal('run', 'run-1')}/").content.decode()
    assert ('id="run-aggregate"><strong><span class="enum" title="cancelled_with_confirmed_payments">'
            'Cancelled with confirmed payments</span></strong>') in page


def test_a_payment_held_by_a_pending_address_change_says_so(finance, payouts_world):
    approved_run(payouts_world)
    evidence = digest("ownership", "update-1")
    assert payouts_world.submit("UpdateRecipient", {"update_id": "update-1", "recipient_id": "artist-a", "step": {
        "action": "request", "version": 2, "payout_address": payloads.address("new"), "evidence_digest": evidence}},
        actor=FINANCE, evidence=[evidence]).accepted
    held = finance[FINANCE_2].get("/ledger/payouts/payments/?state=held").content.decode()
    assert "run-1.artist-a" in held and "update-1" in held
    page = finance[FINANCE_2].get(f"/ledger/payouts/{seal('run', 'run-1')}/").content.decode()
    assert "held until address change update-1 is decided" in page
