"""An outcome names the outbox intents its execution created, so the owner can announce them at once."""

from __future__ import annotations

from tests.money_payouts.world import PayoutWorld


def test_approval_names_its_payment_intents_and_a_claim_names_none(payouts: PayoutWorld):
    plan = {"artist-a": payouts.payable_line_ids("artist-a")}
    prepared = payouts.prepare("run-1", plan)
    assert prepared.accepted and prepared.new_effects == ()
    approved = payouts.approve("run-1", payouts.confirmed_statements(plan))
    assert approved.accepted and approved.new_effects == ("run-1.artist-a.effect",)
    claimed = payouts.claim("run-1.artist-a.effect")
    assert claimed.accepted and claimed.new_effects == ()


def test_a_stored_outcome_announces_nothing_again(payouts: PayoutWorld):
    plan = {"artist-a": payouts.payable_line_ids("artist-a")}
    payouts.prepare("run-1", plan)
    approved = payouts.approve("run-1", payouts.confirmed_statements(plan))
    resolved = payouts.owner.resolve(approved.command_id)
    assert resolved.duplicate and resolved.new_effects == () and resolved.entry_hash == approved.entry_hash
