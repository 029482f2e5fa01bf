"""RegisterAccount: admin-only provisioning, one account per identity, no self-service, revisioned changes."""

from __future__ import annotations

from typing import Any

import pytest

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.genesis import default_genesis, validate_genesis
from tests.support import payloads
from tests.support.outcomes import assert_accepted, assert_refused, assert_rejected


def change(envelopes, account_id: str, *, kind: str = "staff", revision: int | None = 1, actor: str = "genesis-admin",
           **fields: Any) -> dict[str, Any]:
    """RegisterAccount for an existing account, stating its expected revision unless ``revision`` is None."""
    payload = {"account_id": account_id, "kind": kind, "identity_digest": envelopes.digest("id", account_id),
               "roles": [], **fields}
    expected = [] if revision is None else [{"cf": "state", "key": f"account/{account_id}", "revision": revision}]
    return envelopes("RegisterAccount", payload, actor=actor, expected=expected)


@pytest.mark.parametrize("actor, roles", [("fin-1", ["finance"]), ("ingest-1", ["ingest"]), ("aud-1", ["auditor"])])
def test_only_an_admin_provisions(owner, envelopes, actor, roles):
    assert_accepted(owner, envelopes.account(actor, "worker" if actor.startswith("ingest") else "staff", roles))
    assert_rejected(owner, envelopes.account("acct-1") | {"actor_id": actor}, "CAPABILITY_MISSING")


def test_a_provisioned_admin_provisions_and_a_deactivated_one_does_not(owner, envelopes):
    assert_accepted(owner, envelopes.account("adm-2", roles=["admin"], status="deactivated"))
    assert owner.get("state", "actor/adm-2").data == {"roles": ["admin"], "status": "deactivated"}
    assert_rejected(owner, envelopes.account("acct-2") | {"actor_id": "adm-2"}, "CAPABILITY_MISSING")
    assert_accepted(owner, envelopes.account("adm-3", roles=["admin"]))
    assert_accepted(owner, envelopes.account("acct-1") | {"actor_id": "adm-3"})


def test_an_identity_has_one_account(owner, envelopes):
    assert_accepted(owner, envelopes.account("acct-1"))
    twin = envelopes.account("acct-2")
    twin["payload"]["identity_digest"] = envelopes.digest("id", "acct-1")
    assert_rejected(owner, twin, "ALREADY_EXISTS")


def test_an_admin_cannot_change_their_own_account(owner, envelopes):
    assert_rejected(owner, envelopes.account("genesis-admin", roles=["admin", "finance"]), "FOUR_EYES_REQUIRED")
    assert_accepted(owner, envelopes.account("adm-2", roles=["admin"]))
    assert_rejected(owner, change(envelopes, "adm-2", roles=["admin", "finance"], actor="adm-2"), "FOUR_EYES_REQUIRED")


@pytest.mark.parametrize("fields", [{"roles": []}, {"roles": ["admin"], "status": "deactivated"}])
def test_an_actor_named_in_genesis_is_not_registered_over(owner, envelopes, fields):
    """The genesis admin has an actor record and no account: registering its ID would strip it unguarded."""
    assert_accepted(owner, envelopes.account("adm-2", roles=["admin"]))
    payload = {"account_id": "genesis-admin", "kind": "staff", "identity_digest": envelopes.digest("mine", "adm-2"),
               **fields}
    assert_rejected(owner, envelopes("RegisterAccount", payload, actor="adm-2"), "ALREADY_EXISTS")
    assert owner.get("state", "actor/genesis-admin").data == {"roles": ["admin"], "status": "active"}
    assert_rejected(owner, envelopes.account("fin-1", roles=["finance"]) | {"actor_id": "adm-2"}, "FOUR_EYES_REQUIRED")


def test_changing_roles_needs_the_expected_revision(owner, envelopes):
    assert_accepted(owner, envelopes.account("acct-1", roles=["finance"]))
    assert_rejected(owner, change(envelopes, "acct-1", revision=None, roles=["admin"]), "STALE_REVISION")
    assert_accepted(owner, change(envelopes, "acct-1", roles=["ops"]))
    assert owner.get("state", "actor/acct-1").data["roles"] == ["ops"]


def test_identity_and_kind_never_change(owner, envelopes):
    assert_accepted(owner, envelopes.account("acct-1", roles=["finance"]))
    assert_rejected(owner, change(envelopes, "acct-1", kind="worker"), "INVALID_STATE")
    other_identity = change(envelopes, "acct-1")
    other_identity["payload"]["identity_digest"] = envelopes.digest("someone else")
    assert_rejected(owner, other_identity, "INVALID_STATE")


ADAPTER_AND_WORKER_ROLES = ["committer", "coordinator", "dispatcher", "ingest", "maintenance", "observer", "signer"]


@pytest.mark.parametrize("role", ADAPTER_AND_WORKER_ROLES)
def test_adapter_and_worker_roles_are_held_by_worker_accounts_never_by_a_person(owner, envelopes, role):
    """A staff account signs in and gets an enrolment link: one admin could act as an ingest adapter through it."""
    assert_rejected(owner, envelopes.account("sock-1", "staff", [role]), "INVALID_STATE")
    assert_rejected(owner, envelopes.account("sock-2", "staff", sorted(["ops", role])), "INVALID_STATE")
    assert owner.get("state", "actor/sock-1") is None
    assert_accepted(owner, envelopes.account("wkr-1", "worker", [role]))
    assert owner.get("state", "actor/wkr-1").data == {"roles": [role], "status": "active"}


def test_an_adapter_role_is_never_added_to_a_persons_account(owner, envelopes):
    assert_accepted(owner, envelopes.account("fin-1", roles=["finance"]))
    assert_rejected(owner, change(envelopes, "fin-1", roles=["finance", "ingest"]), "INVALID_STATE")
    assert owner.get("state", "actor/fin-1").data["roles"] == ["finance"]


def test_a_genesis_actor_is_a_person_or_a_worker_not_both():
    validate_genesis({**default_genesis(), "actors": [{"actor_id": "genesis-admin", "roles": ["admin"]},
                                                      {"actor_id": "genesis-signer", "roles": ["signer"]}]})
    with pytest.raises(LedgerError) as refused:
        validate_genesis({**default_genesis(), "actors": [{"actor_id": "genesis-admin", "roles": ["admin", "ingest"]}]})
    assert refused.value.code == ErrorCode.VERIFICATION_FAILED


@pytest.mark.parametrize("kind", ["listener", "artist", "operator"])
def test_only_staff_and_workers_hold_roles(owner, envelopes, kind):
    assert_rejected(owner, envelopes.account("acct-1", kind, ["auditor"]), "INVALID_STATE")


@pytest.mark.parametrize("kind", ["staff", "worker"])
def test_staff_and_workers_become_actors_with_their_roles(owner, envelopes, kind):
    assert_accepted(owner, envelopes.account("acct-1", kind, ["auditor"]))
    assert owner.get("state", "actor/acct-1").data == {"roles": ["auditor"], "status": "active"}


@pytest.mark.parametrize("kind", ["staff", "worker", "listener"])
def test_only_artists_and_operators_have_a_payout_address(owner, envelopes, kind):
    envelope = envelopes.account("acct-1", kind, payout_address=payloads.address("acct-1"))
    assert_rejected(owner, envelope, "INVALID_STATE")


@pytest.mark.parametrize("kind", ["artist", "operator"])
def test_an_artist_or_operator_gets_a_first_recipient_version(owner, envelopes, kind):
    assert_accepted(owner, envelopes.account("acct-1", kind, payout_address=payloads.address("acct-1")))
    recipient = owner.get("state", "recipient/acct-1")
    assert (recipient.revision, recipient.data) == (
        1, {"recipient_id": "acct-1", "payout_address": payloads.address("acct-1"), "version": 1})
    assert owner.get("state", "actor/acct-1") is None


def test_a_payout_address_is_never_changed_through_registration(owner, envelopes):
    assert_accepted(owner, envelopes.account("art-1", "artist", payout_address=payloads.address("art-1")))
    moved = change(envelopes, "art-1", kind="artist", payout_address=payloads.address("elsewhere"))
    assert_rejected(owner, moved, "INVALID_STATE")
    assert_accepted(owner, change(envelopes, "art-1", kind="artist"))
    assert owner.get("state", "recipient/art-1").data["payout_address"] == payloads.address("art-1")


@pytest.mark.parametrize("roles", [["ops", "finance"], ["ops", "ops"], ["superuser"]])
def test_roles_must_be_known_sorted_and_distinct(owner, envelopes, roles):
    envelope = envelopes.account("acct-1")
    envelope["payload"]["roles"] = roles
    assert_refused(owner, envelope, ErrorCode.INVALID_PAYLOAD)
