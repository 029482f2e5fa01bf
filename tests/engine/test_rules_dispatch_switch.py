"""Dispatch is paused and resumed by journalled commands: one person with step-up pauses, two resume, never while
the ledger owes a reconciliation, and resuming promotes nothing (docs/adr/0091)."""

from __future__ import annotations

import pytest

from ledger_engine.application.owner import LedgerOwner, promote, read_writer_generation
from ledger_engine.checkpoint.backup import backup_owner, restore
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.domain.commands.dispatch_switch import RESUME_TTL_MS
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.storage.rocks import RocksStore
from tests.conftest import GENESIS_ADMIN
from tests.support.dispatch_switch import pause, resume
from tests.support.outcomes import assert_accepted, assert_refused, assert_rejected
from tests.support.step_up import genesis

ADMIN_2, OPS, FINANCE, AUDITOR = "adm-2", "ops-1", "fin-1", "aud-1"


@pytest.fixture
def staff(owner, envelopes):
    """Two admins, an ops member, a finance member and an auditor."""
    for account_id, role in ((FINANCE, "finance"), (OPS, "ops"), (AUDITOR, "auditor"), (ADMIN_2, "admin")):
        assert_accepted(owner, envelopes.account(account_id, roles=[role]))
    return owner


def pausing(envelopes, *, actor: str = OPS, step_up: bool = True, reason: str = "rotating the payer key") -> dict:
    return envelopes("PauseDispatch", {"reason": reason}, actor=actor, step_up=step_up)


def requesting(envelopes, resume_id: str = "resume-1", *, actor: str = OPS, **options) -> dict:
    return envelopes("RequestDispatchResume", {"resume_id": resume_id, "reason": "new payer funded"}, actor=actor,
                     **options)


def approving(envelopes, resume_id: str = "resume-1", *, actor: str = GENESIS_ADMIN, step_up: bool = True,
              **options) -> dict:
    return envelopes("DecideDispatchResume", {"resume_id": resume_id, "decision": "approve"}, actor=actor,
                     step_up=step_up, **options)


def switch(owner) -> dict | None:
    record = owner.get("state", "dispatch_switch")
    return record.data if record else None


def test_one_staff_member_pauses_alone_with_step_up_and_the_journal_says_who_why_and_when(staff, envelopes):
    head = staff.head().sequence
    envelope = pausing(envelopes)
    outcome = assert_accepted(staff, envelope)
    assert outcome.sequence == head + 1 and staff.head().sequence == head + 1
    assert staff.journal_entry(outcome.sequence)["envelope"]["actor_id"] == OPS
    assert switch(staff) == {"status": "paused", "reason": "rotating the payer key", "changed_by": OPS,
                             "changed_at_ms": envelope["admitted_at_ms"], "requested_by": None, "resume_id": None}
    state = staff.dispatch_state()
    assert (state["enabled"], state["paused_by"], state["reason"]) == (False, OPS, "rotating the payer key")


def test_a_pause_without_step_up_is_refused_and_dispatch_runs_on(staff, envelopes):
    assert_rejected(staff, pausing(envelopes, step_up=False), ErrorCode.STEP_UP_REQUIRED)
    assert switch(staff) is None and staff.dispatch_state()["enabled"] is True


@pytest.mark.parametrize("actor", [FINANCE, AUDITOR])
def test_only_admin_and_ops_pause(staff, envelopes, actor):
    assert_rejected(staff, pausing(envelopes, actor=actor), ErrorCode.CAPABILITY_MISSING)
    assert staff.dispatch_state()["enabled"] is True


@pytest.mark.parametrize("reason", ["", " ", "two\nlines", "x" * 201])
def test_a_pause_states_one_printable_line(staff, envelopes, reason):
    assert_refused(staff, pausing(envelopes, reason=reason), ErrorCode.INVALID_PAYLOAD)


def test_pausing_twice_is_refused(staff, envelopes):
    assert_accepted(staff, pausing(envelopes))
    assert_rejected(staff, pausing(envelopes, actor=ADMIN_2), ErrorCode.INVALID_STATE)
    assert switch(staff)["changed_by"] == OPS


def test_resume_is_requested_by_one_and_approved_by_another_admin_with_step_up(staff, envelopes):
    assert_accepted(staff, pausing(envelopes))
    assert_accepted(staff, requesting(envelopes))
    assert staff.dispatch_state()["resume_request"]["requested_by"] == OPS
    assert staff.dispatch_state()["enabled"] is False
    approval = approving(envelopes)
    assert_accepted(staff, approval)
    assert switch(staff) == {"status": "running", "reason": "new payer funded", "changed_by": GENESIS_ADMIN,
                             "changed_at_ms": approval["admitted_at_ms"], "requested_by": OPS,
                             "resume_id": "resume-1"}
    state = staff.dispatch_state()
    assert state["enabled"] is True and state["paused_by"] is None and state["resume_request"] is None


def test_the_admin_who_requested_a_resume_cannot_approve_it(staff, envelopes):
    assert_accepted(staff, pausing(envelopes))
    assert_accepted(staff, requesting(envelopes, actor=ADMIN_2))
    assert_rejected(staff, approving(envelopes, actor=ADMIN_2), ErrorCode.FOUR_EYES_REQUIRED)
    assert staff.dispatch_state()["enabled"] is False


def test_approving_a_resume_needs_step_up_and_an_admin(staff, envelopes):
    assert_accepted(staff, pausing(envelopes))
    assert_accepted(staff, requesting(envelopes))
    assert_rejected(staff, approving(envelopes, step_up=False), ErrorCode.STEP_UP_REQUIRED)
    assert_rejected(staff, approving(envelopes, actor=FINANCE), ErrorCode.CAPABILITY_MISSING)
    assert staff.dispatch_state()["enabled"] is False


def test_a_declined_resume_leaves_dispatch_paused_and_frees_the_next_request(staff, envelopes):
    assert_accepted(staff, pausing(envelopes))
    assert_accepted(staff, requesting(envelopes))
    assert_rejected(staff, requesting(envelopes, "resume-2", actor=ADMIN_2), ErrorCode.ALREADY_EXISTS)
    assert_accepted(staff, envelopes("DecideDispatchResume", {"resume_id": "resume-1", "decision": "decline",
                                                              "reason": "incident_open"}, actor=ADMIN_2))
    assert staff.dispatch_state()["enabled"] is False
    assert_accepted(staff, requesting(envelopes, "resume-2", actor=ADMIN_2))


def test_a_resume_is_asked_for_only_while_paused_and_expires(staff, envelopes):
    assert_rejected(staff, requesting(envelopes), ErrorCode.INVALID_STATE)
    assert_accepted(staff, pausing(envelopes))
    requested = requesting(envelopes)
    assert_accepted(staff, requested)
    late = requested["admitted_at_ms"] + RESUME_TTL_MS + 1
    assert_rejected(staff, approving(envelopes, admitted_at_ms=late), ErrorCode.EXPIRED)
    assert_accepted(staff, requesting(envelopes, "resume-2"))  # the expired one no longer blocks
    assert staff.get("state", "dispatch_resume/resume-1").data["status"] == "expired"


def test_resuming_does_not_promote_the_writer_generation(staff, envelopes):
    generation = staff.writer_generation
    assert_accepted(staff, pausing(envelopes))
    assert_accepted(staff, requesting(envelopes))
    assert_accepted(staff, approving(envelopes))
    assert staff.writer_generation == generation
    assert staff.at_boundary(read_writer_generation) == generation


def test_replay_reproduces_the_switch_and_its_requests(staff, envelopes, tmp_path):
    assert_accepted(staff, pausing(envelopes))
    assert_accepted(staff, requesting(envelopes))
    staff.with_checkpoint(lambda store: export_store(store, tmp_path / "export"))
    replay_export(tmp_path / "export", tmp_path / "replayed")
    with LedgerOwner.open(tmp_path / "replayed") as replayed:
        assert switch(replayed) == switch(staff)
        assert replayed.dispatch_state()["resume_request"] == staff.dispatch_state()["resume_request"]
        assert replayed.dispatch_state()["paused_by"] == OPS


@pytest.fixture
def restored(tmp_path):
    """A ledger restored from a backup taken while dispatch ran: it owes a reconciliation."""
    with LedgerOwner.open(tmp_path / "live", genesis=genesis()) as owner:
        backup_owner(owner, tmp_path / "backup")
    restore(tmp_path / "backup", tmp_path / "restored")
    return tmp_path / "restored"


def test_a_restored_ledger_refuses_a_resume_until_it_is_promoted(restored):
    with LedgerOwner.open(restored) as owner:
        assert owner.dispatch_state()["enabled"] is False and owner.dispatch_state()["paused_by"] is None
        assert "reconcile" in owner.dispatch_state()["reason"]
        pause(owner, actor=GENESIS_ADMIN)  # the safe direction is open to a copy that owes a reconciliation
        head = owner.head()
        with pytest.raises(LedgerError) as refused:
            resume(owner, requester=GENESIS_ADMIN, approver=GENESIS_ADMIN)
        assert refused.value.code == ErrorCode.RECONCILIATION_REQUIRED and owner.head() == head
    with RocksStore(restored) as store:
        promote(store, "reconcile exited 0")
    with LedgerOwner.open(restored) as owner:
        state = owner.dispatch_state()
        assert (state["enabled"], state["paused_by"], state["reconciliation_owed"]) == (False, GENESIS_ADMIN, None)


def test_promoting_lifts_what_was_owed_and_the_journalled_switch_decides(restored):
    with RocksStore(restored) as store:
        before = read_writer_generation(store)
        assert promote(store, "reconcile exited 0") == before + 1
    with LedgerOwner.open(restored) as owner:
        assert owner.dispatch_state()["enabled"] is True
