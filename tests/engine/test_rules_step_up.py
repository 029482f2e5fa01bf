"""Step-up proofs, checked by the ledger: a human approval without a fresh proof bound to it is refused,
whatever path the envelope came by."""

from __future__ import annotations

import uuid

import pytest

from ledger_engine.adapters.signatures import key_from_seed
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.registry import registered_types, spec_for
from ledger_engine.domain.step_up import PROOF_TTL_MS, with_proof
from ledger_engine.errors import ErrorCode
from ledger_engine.genesis import default_genesis
from tests.money_allocation.world import FINANCE, FINANCE_2, MoneyWorld, fixture_commands
from tests.money_payouts.world import PayoutWorld
from tests.support.outcomes import assert_refused, assert_rejected
from tests.support.step_up import stepped_up

OTHER_KEY = key_from_seed("porto:test:some-other-step-up-key")


@pytest.fixture
def world(owner, envelopes) -> PayoutWorld:
    """A prepared run, waiting for approval, with confirmed statements for every recipient."""
    with fixture_commands():
        payouts = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup()
        payouts.statements = payouts.confirmed_statements()
        assert payouts.prepare("run-1").accepted
        yield payouts


def approval(world: PayoutWorld, *, actor: str = FINANCE_2) -> dict:
    """A plain ApprovePayoutRun envelope for run-1, on the world's clock."""
    world.now_ms += 1_000
    run = world.state("payment_run/run-1")
    return world.money.envelopes("ApprovePayoutRun", {"run_id": "run-1", "run_hash": run["run_hash"],
                                                      "statement_ids": sorted(world.statements)},
                                 actor=actor, admitted_at_ms=world.now_ms)


def test_exactly_the_human_approvals_declare_step_up():
    declared = {command_type for command_type in registered_types() if spec_for(command_type).human_approval}
    assert declared == {"ApprovePayoutRun", "UpdateRecipient", "DecideStaffChange", "DecideCorrection",
                        "PauseDispatch", "DecideDispatchResume"}


def test_an_approval_without_a_proof_is_rejected_and_changes_nothing(world):
    assert_rejected(world.owner, approval(world), ErrorCode.STEP_UP_REQUIRED)
    assert world.state("payment_run/run-1")["status"] == "prepared"


def test_an_approval_with_a_fresh_proof_for_it_is_accepted(world):
    outcome = world.owner.submit(stepped_up(approval(world)))
    assert outcome.accepted, outcome.result
    assert world.state("payment_run/run-1")["approval"]["approved_by"] == FINANCE_2


def test_a_proof_opens_only_the_command_actor_and_payload_it_was_issued_for(world):
    proven = stepped_up(approval(world))
    other_command = approval(world)
    other_command["payload"]["step_up"] = proven["payload"]["step_up"]
    other_actor = {**proven, "actor_id": FINANCE, "command_id": str(uuid.uuid4())}
    other_payload = {**proven, "payload": {**proven["payload"], "statement_ids": sorted(world.statements)[:-1]}}
    for forged in (other_actor, other_payload, other_command):  # in admission order
        assert_rejected(world.owner, forged, ErrorCode.STEP_UP_INVALID)
    assert world.state("payment_run/run-1")["status"] == "prepared"


def test_a_proof_signed_by_another_key_is_invalid(world):
    assert_rejected(world.owner, with_proof(approval(world), OTHER_KEY), ErrorCode.STEP_UP_INVALID)


@pytest.mark.parametrize("age_ms", [PROOF_TTL_MS + 1, -1])
def test_a_stale_proof_or_one_from_after_admission_is_expired(world, age_ms):
    envelope = approval(world)
    stale = stepped_up(envelope, issued_at_ms=envelope["admitted_at_ms"] - age_ms)
    assert_rejected(world.owner, stale, ErrorCode.STEP_UP_EXPIRED)


def test_a_proof_at_the_edge_of_its_lifetime_is_still_fresh(world):
    envelope = approval(world)
    assert world.owner.submit(stepped_up(envelope, issued_at_ms=envelope["admitted_at_ms"] - PROOF_TTL_MS)).accepted


@pytest.mark.parametrize(("proof", "code"), [
    ({"issued_at_ms": 1, "signature": "00"}, ErrorCode.INVALID_PAYLOAD),
    ({"issued_at_ms": 1, "signature": "0" * 128, "key": "mine"}, ErrorCode.UNKNOWN_FIELD),
    ("a code: 123456", ErrorCode.INVALID_PAYLOAD),
])
def test_a_malformed_proof_is_refused_before_admission(world, proof, code):
    envelope = approval(world)
    envelope["payload"]["step_up"] = proof
    assert_refused(world.owner, envelope, code)


def test_a_proof_on_a_command_that_declares_no_step_up_is_an_unknown_field(world):
    cancel = world.money.envelopes("CancelPayoutRun", {"run_id": "run-1", "reason": "superseded"}, actor=FINANCE,
                                   expected=[world.revision("state", "payment_run/run-1")])
    assert_refused(world.owner, stepped_up(cancel), ErrorCode.UNKNOWN_FIELD)


def test_without_a_verifier_key_in_genesis_nothing_can_be_approved(tmp_path, envelopes):
    with fixture_commands(), LedgerOwner.open(tmp_path / "ledger", genesis=default_genesis()) as owner:
        world = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup()
        world.statements = world.confirmed_statements()
        assert world.prepare("run-1").accepted
        outcome = assert_rejected(owner, stepped_up(approval(world)), ErrorCode.STEP_UP_REQUIRED)
        assert "no step-up verifier" in outcome.result["detail"]
