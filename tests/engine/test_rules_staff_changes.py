"""Two admins for every guarded staff change: requests, step-up decisions, credentials, lockout clearances."""

from __future__ import annotations

from typing import Any

import pytest

from ledger_engine.adapters.signatures import key_from_seed
from ledger_engine.domain.commands.staff_changes import REQUEST_TTL_MS
from ledger_engine.domain.step_up import public_key_hex, with_proof
from ledger_engine.errors import ErrorCode
from tests.conftest import GENESIS_ADMIN
from tests.support.outcomes import assert_accepted, assert_rejected

ADMIN_2 = "adm-2"
ADMIN_3 = "adm-3"


@pytest.fixture
def staff(owner, envelopes):
    """Two active admins (so four eyes applies), a finance user, an ops user and a new staff account."""
    for envelope in (envelopes.account("fin-1", roles=["finance"]), envelopes.account("ops-1", roles=["ops"]),
                     envelopes.account(ADMIN_2, roles=["admin"]), envelopes.account("new-1")):
        assert_accepted(owner, envelope)
    return owner


def account(envelopes, account_id: str, *, revision: int, actor: str = GENESIS_ADMIN, **fields: Any) -> dict:
    payload = {"account_id": account_id, "kind": "staff", "identity_digest": envelopes.digest("id", account_id),
               "roles": [], **fields}
    return envelopes("RegisterAccount", payload, actor=actor,
                     expected=[{"cf": "state", "key": f"account/{account_id}", "revision": revision}])


def request(envelopes, change_id: str, *, actor: str = ADMIN_2, admitted_at_ms: int | None = None,
            **change: Any) -> dict:
    at = {} if admitted_at_ms is None else {"admitted_at_ms": admitted_at_ms}
    return envelopes("RequestStaffChange", {"change_id": change_id, "change": change}, actor=actor, **at)


def approve(envelopes, change_id: str, *, actor: str = GENESIS_ADMIN, step_up: bool = True, **options) -> dict:
    return envelopes("DecideStaffChange", {"change_id": change_id, "decision": "approve"}, actor=actor,
                     step_up=step_up, **options)


def roles_of(owner, actor_id: str) -> list[str]:
    return owner.get("state", f"actor/{actor_id}").data["roles"]


def test_while_one_admin_is_active_it_provisions_alone_and_from_two_on_it_cannot(owner, envelopes):
    assert_accepted(owner, envelopes.account("fin-1", roles=["finance"]))  # the genesis admin, alone
    assert_accepted(owner, envelopes.account(ADMIN_2, roles=["admin"]))
    assert_rejected(owner, envelopes.account("fin-2", roles=["finance"]), ErrorCode.FOUR_EYES_REQUIRED)
    assert_rejected(owner, envelopes.account("adm-9", roles=["admin"]) | {"actor_id": ADMIN_2},
                    ErrorCode.FOUR_EYES_REQUIRED)


def test_one_admin_cannot_grant_remove_reactivate_or_deactivate_a_guarded_role(staff, envelopes):
    for forged in (account(envelopes, "ops-1", revision=1, roles=["finance", "ops"]),
                   account(envelopes, "fin-1", revision=1, roles=[]),
                   account(envelopes, "fin-1", revision=1, roles=["finance"], status="deactivated"),
                   account(envelopes, ADMIN_2, revision=1, roles=["admin"], status="deactivated")):
        assert_rejected(staff, forged, ErrorCode.FOUR_EYES_REQUIRED)
    assert staff.get("state", "actor/fin-1").data == {"roles": ["finance"], "status": "active"}
    assert_accepted(staff, account(envelopes, "ops-1", revision=1, roles=["auditor", "ops"]))  # not guarded
    assert_accepted(staff, account(envelopes, "ops-1", revision=2, roles=["auditor", "ops"], status="deactivated"))


def test_a_finance_account_is_deactivated_by_a_staff_change_and_keeps_its_role(staff, envelopes):
    assert_accepted(staff, request(envelopes, "change-1", kind="deactivate", account_id="fin-1"))
    assert_accepted(staff, approve(envelopes, "change-1"))
    assert staff.get("state", "actor/fin-1").data == {"roles": ["finance"], "status": "deactivated"}


def test_with_two_admins_one_cannot_make_a_person_an_adapter_nor_two_grant_it(staff, envelopes):
    """Whoever holds ingest mints funding lots and names the artists a work pays: never a person's account."""
    assert_rejected(staff, envelopes.account("sock-1", roles=["coordinator", "ingest"]), ErrorCode.INVALID_STATE)
    assert_rejected(staff, account(envelopes, "fin-1", revision=1, roles=["finance", "ingest"]),
                    ErrorCode.INVALID_STATE)
    assert_rejected(staff, request(envelopes, "change-1", kind="grant_role", account_id="new-1", role="ingest"),
                    ErrorCode.INVALID_STATE)
    assert staff.get("state", "actor/sock-1") is None
    assert roles_of(staff, "fin-1") == ["finance"] and roles_of(staff, "new-1") == []


def test_a_grant_is_requested_by_one_admin_and_approved_by_another_with_step_up(staff, envelopes):
    assert_accepted(staff, request(envelopes, "change-1", kind="grant_role", account_id="new-1", role="finance"))
    assert_rejected(staff, approve(envelopes, "change-1", actor=ADMIN_2), ErrorCode.FOUR_EYES_REQUIRED)
    assert_rejected(staff, approve(envelopes, "change-1", step_up=False), ErrorCode.STEP_UP_REQUIRED)
    assert roles_of(staff, "new-1") == []
    assert_accepted(staff, approve(envelopes, "change-1"))
    assert roles_of(staff, "new-1") == ["finance"]
    record = staff.get("state", "staff_change/change-1").data
    assert (record["status"], record["requested_by"], record["decision"]["decided_by"]) == (
        "approved", ADMIN_2, GENESIS_ADMIN)


def test_nobody_requests_or_decides_a_change_to_their_own_account(staff, envelopes):
    assert_rejected(staff, request(envelopes, "change-1", kind="reset_password", account_id=ADMIN_2),
                    ErrorCode.FOUR_EYES_REQUIRED)
    assert_accepted(staff, request(envelopes, "change-2", actor=GENESIS_ADMIN, kind="reset_password",
                                   account_id=ADMIN_2))
    assert_rejected(staff, approve(envelopes, "change-2", actor=ADMIN_2), ErrorCode.FOUR_EYES_REQUIRED)


def test_with_two_admins_neither_can_be_removed_so_four_eyes_never_ends(staff, envelopes):
    assert_accepted(staff, request(envelopes, "change-1", actor=GENESIS_ADMIN, kind="remove_role", account_id=ADMIN_2,
                                   role="admin"))
    assert_accepted(staff, request(envelopes, "change-2", kind="deactivate", account_id=GENESIS_ADMIN))
    for change_id in ("change-1", "change-2"):
        for decider in (GENESIS_ADMIN, ADMIN_2):  # each is the requester or the admin it would remove
            assert_rejected(staff, approve(envelopes, change_id, actor=decider), ErrorCode.FOUR_EYES_REQUIRED)
    assert roles_of(staff, ADMIN_2) == roles_of(staff, GENESIS_ADMIN) == ["admin"]


def test_an_admin_never_holds_finance(staff, envelopes):
    assert_rejected(staff, request(envelopes, "change-1", kind="grant_role", account_id="fin-1", role="admin"),
                    ErrorCode.ROLE_CONFLICT)
    assert_rejected(staff, account(envelopes, "ops-1", revision=1, roles=["admin", "finance"]), ErrorCode.ROLE_CONFLICT)
    assert_rejected(staff, envelopes.account("wkr-1", "worker", ["finance"]), ErrorCode.INVALID_STATE)


def test_a_target_has_one_pending_change_and_an_expired_one_gives_way(staff, envelopes):
    assert_accepted(staff, request(envelopes, "change-1", kind="reset_password", account_id="fin-1"))
    assert_rejected(staff, request(envelopes, "change-2", kind="reset_authenticator", account_id="fin-1"),
                    ErrorCode.ALREADY_EXISTS)
    requested_at = staff.get("state", "staff_change/change-1").data["requested_at_ms"]
    late = requested_at + REQUEST_TTL_MS + 1
    assert_rejected(staff, approve(envelopes, "change-1", admitted_at_ms=late), ErrorCode.EXPIRED)
    replacement = request(envelopes, "change-3", kind="reset_authenticator", account_id="fin-1",
                          admitted_at_ms=late + 1)
    assert_accepted(staff, replacement)
    assert staff.get("state", "staff_change/change-1").data["status"] == "expired"


def test_a_decline_states_a_reason_and_needs_no_step_up(staff, envelopes):
    assert_accepted(staff, request(envelopes, "change-1", kind="grant_role", account_id="new-1", role="finance"))
    decline = envelopes("DecideStaffChange", {"change_id": "change-1", "decision": "decline",
                                              "reason": "identity_not_confirmed"})
    assert_accepted(staff, decline)
    assert staff.get("state", "staff_change/change-1").data["status"] == "declined"
    assert roles_of(staff, "new-1") == []
    assert_rejected(staff, approve(envelopes, "change-1"), ErrorCode.INVALID_STATE)


def test_reactivation_takes_two_admins(staff, envelopes):
    assert_accepted(staff, account(envelopes, "ops-1", revision=1, roles=["ops"], status="deactivated"))
    assert_accepted(staff, request(envelopes, "change-1", kind="reactivate", account_id="ops-1"))
    assert_accepted(staff, approve(envelopes, "change-1"))
    assert staff.get("state", "actor/ops-1").data == {"roles": ["ops"], "status": "active"}


def profile(envelopes, account_id: str, change: str, *, actor: str, link_id: str | None = "link-1",
            factors: list[str] = ()) -> dict:
    payload = {"account_id": account_id, "change": change, "factors": list(factors)}
    if link_id is not None:
        payload["link_id"] = link_id
    return envelopes("RecordProfileChange", payload, actor=actor)


def test_a_new_account_enrols_once_through_its_latest_link_and_only_its_owner_completes_it(staff, envelopes):
    both = ["authenticator", "password"]
    assert_accepted(staff, profile(envelopes, "new-1", "enrolment_link_issued", actor=ADMIN_2, link_id="link-1"))
    assert_accepted(staff, profile(envelopes, "new-1", "enrolment_link_issued", actor=ADMIN_2, link_id="link-2"))
    assert_rejected(staff, profile(envelopes, "new-1", "enrolment_completed", actor=ADMIN_2, link_id="link-2",
                                   factors=both), ErrorCode.CAPABILITY_MISSING)
    assert_rejected(staff, profile(envelopes, "new-1", "enrolment_completed", actor="new-1", link_id="link-1",
                                   factors=both), ErrorCode.INVALID_REFERENCE)
    assert_rejected(staff, profile(envelopes, "new-1", "enrolment_completed", actor="new-1", link_id="link-2",
                                   factors=["password"]), ErrorCode.INVALID_STATE)
    assert_accepted(staff, profile(envelopes, "new-1", "enrolment_completed", actor="new-1", link_id="link-2",
                                   factors=both))
    assert staff.get("state", "staff_credentials/new-1").data["status"] == "enrolled"
    # Replacing enrolled credentials is a reset: one admin cannot send another link.
    assert_rejected(staff, profile(envelopes, "new-1", "enrolment_link_issued", actor=ADMIN_2, link_id="link-3"),
                    ErrorCode.FOUR_EYES_REQUIRED)
    assert_accepted(staff, profile(envelopes, "new-1", "password_changed", actor="new-1", link_id=None))


def test_an_approved_reset_opens_enrolment_for_that_factor_only(staff, envelopes):
    assert_accepted(staff, request(envelopes, "change-1", kind="reset_authenticator", account_id="fin-1"))
    assert_accepted(staff, approve(envelopes, "change-1"))
    credentials = staff.get("state", "staff_credentials/fin-1").data
    assert (credentials["status"], credentials["reset"], credentials["staff_change_id"]) == (
        "pending", "reset_authenticator", "change-1")
    assert_accepted(staff, profile(envelopes, "fin-1", "enrolment_link_issued", actor=GENESIS_ADMIN))
    assert_rejected(staff, profile(envelopes, "fin-1", "enrolment_completed", actor="fin-1",
                                   factors=["authenticator", "password"]), ErrorCode.INVALID_STATE)
    assert_accepted(staff, profile(envelopes, "fin-1", "enrolment_completed", actor="fin-1",
                                   factors=["authenticator"]))


def test_a_new_step_up_verifier_takes_two_admins_and_then_only_its_proofs_count(staff, envelopes):
    new_key = key_from_seed("porto:test:rotated-step-up-key")
    assert_accepted(staff, request(envelopes, "change-1", kind="set_step_up_verifier",
                                   public_key=public_key_hex(new_key)))
    assert_rejected(staff, approve(envelopes, "change-1", actor=ADMIN_2), ErrorCode.FOUR_EYES_REQUIRED)
    assert_accepted(staff, approve(envelopes, "change-1"))
    assert staff.get("state", "step_up_verifier").data == {"public_key": public_key_hex(new_key)}
    assert_accepted(staff, request(envelopes, "change-2", kind="reset_password", account_id="fin-1"))
    assert_rejected(staff, approve(envelopes, "change-2"), ErrorCode.STEP_UP_INVALID)  # the old test key
    assert_accepted(staff, with_proof(approve(envelopes, "change-2", step_up=False), new_key))


def test_a_new_payer_address_takes_two_admins(staff, envelopes):
    payer = "0x" + "ab" * 32
    assert staff.get("state", "payer") is None
    assert_accepted(staff, request(envelopes, "change-1", kind="set_payer_address", payer_address=payer))
    assert_rejected(staff, approve(envelopes, "change-1", actor=ADMIN_2), ErrorCode.FOUR_EYES_REQUIRED)
    assert_accepted(staff, approve(envelopes, "change-1"))
    assert staff.get("state", "payer").data == {"payer_address": payer}
    assert_rejected(staff, request(envelopes, "change-2", kind="set_payer_address", payer_address=payer),
                    ErrorCode.INVALID_STATE)  # already the payer


def test_a_cleared_lockout_is_recorded_once(staff, envelopes):
    payload = {"clearance_id": "clear-1", "username_digest": envelopes.digest("user", "fin-1"),
               "address_digest": envelopes.digest("ip", "10.0.0.1"), "account_id": "fin-1", "failures": 5}
    assert_accepted(staff, envelopes("RecordLockoutCleared", payload, actor=ADMIN_2))
    assert_rejected(staff, envelopes("RecordLockoutCleared", payload, actor=ADMIN_2), ErrorCode.ALREADY_EXISTS)
    assert_rejected(staff, envelopes("RecordLockoutCleared", {**payload, "clearance_id": "clear-2"}, actor="ops-1"),
                    ErrorCode.CAPABILITY_MISSING)
