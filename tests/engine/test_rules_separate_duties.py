"""Duties no account holds together (docs/adr/0090): admin with finance, signer with observer.

Every path that gives an actor roles refuses the pair with ROLE_CONFLICT and changes nothing: genesis,
provisioning, an account change and a staff change.
"""

from __future__ import annotations

import pytest

from ledger_engine.domain.actors import CONFLICTING_ROLES, role_conflict
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.genesis import default_genesis, validate_genesis
from tests.conftest import GENESIS_ADMIN
from tests.support.outcomes import assert_accepted, assert_rejected

PAYMENT_WORKER = ["dispatcher", "observer", "signer"]  # one credential that both signs and attests the chain


def test_the_conflicting_pairs_are_named_once_each():
    assert set(CONFLICTING_ROLES) == {frozenset({"admin", "finance"}), frozenset({"signer", "observer"})}
    assert role_conflict(PAYMENT_WORKER) == {"signer", "observer"}
    assert role_conflict(["dispatcher", "signer"]) is role_conflict(["dispatcher", "observer"]) is None


@pytest.mark.parametrize("roles", [PAYMENT_WORKER, ["admin", "finance"]])
def test_genesis_names_no_actor_holding_two_duties_kept_apart(roles):
    with pytest.raises(LedgerError) as refused:
        validate_genesis({**default_genesis(), "actors": [{"actor_id": GENESIS_ADMIN, "roles": ["admin"]},
                                                          {"actor_id": "genesis-worker", "roles": roles}]})
    assert refused.value.code == ErrorCode.ROLE_CONFLICT


def test_a_worker_is_provisioned_to_sign_or_to_observe_never_both(owner, envelopes):
    assert_rejected(owner, envelopes.account("payments-1", "worker", PAYMENT_WORKER), ErrorCode.ROLE_CONFLICT)
    assert owner.get("state", "actor/payments-1") is None
    assert_accepted(owner, envelopes.account("payments-1", "worker", ["dispatcher", "signer"]))
    assert_accepted(owner, envelopes.account("observer-1", "worker", ["dispatcher", "observer"]))


def test_a_signer_is_not_given_observer_by_changing_its_account(owner, envelopes):
    assert_accepted(owner, envelopes.account("payments-1", "worker", ["dispatcher", "signer"]))
    expected = [{"cf": "state", "key": "account/payments-1", "revision": 1}]
    changed = envelopes("RegisterAccount", {"account_id": "payments-1", "kind": "worker",
                                            "identity_digest": envelopes.digest("id", "payments-1"),
                                            "roles": PAYMENT_WORKER}, expected=expected)
    assert_rejected(owner, changed, ErrorCode.ROLE_CONFLICT)
    assert owner.get("state", "actor/payments-1").data["roles"] == ["dispatcher", "signer"]


def test_a_staff_change_does_not_give_an_admin_finance(owner, envelopes):
    """Staff changes grant only a person's roles; the guarded pair is refused at the request."""
    assert_accepted(owner, envelopes.account("adm-2", roles=["admin"]))
    request = envelopes("RequestStaffChange", {"change_id": "change-1", "change": {
        "kind": "grant_role", "account_id": "adm-2", "role": "finance"}})
    assert_rejected(owner, request, ErrorCode.ROLE_CONFLICT)
    assert owner.get("state", "actor/adm-2").data["roles"] == ["admin"]
