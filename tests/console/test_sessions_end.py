"""Every change to a person's proof ends the sessions they opened before it; nobody else's."""

from __future__ import annotations

import pytest
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.selectors import payout_queries
from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.services.users import issue_credentials
from tests.console.conftest import STAFF, enrolment_link
from tests.console.test_staff_changes import approve, request_change

NEW_ADDRESS = "0x" + "5e" * 32


@pytest.fixture
def admins(users, client_as):
    """Both demo admins signed in, each with an authenticator."""
    for name in ("admin", "admin2"):
        issue_credentials(users[name])
    return {name: client_as(name) for name in ("admin", "admin2")}


@pytest.fixture
def signed_in(users, admins):
    """A session of each finance user and of the ops user, opened now, each with a password and an authenticator."""
    clients = {}
    for name in ("finance", "finance2", "ops"):
        issue_credentials(users[name])
        clients[name] = Client()
        clients[name].force_login(users[name])
    return clients


def signed_out(client: Client) -> bool:
    response = client.get("/ledger/")
    return response.status_code == 302 and response["Location"].startswith("/login/")


def address_change(client: Client, ledger):
    """Request a payout address change, as the finding's session did."""
    recipient = ledger.read(payout_queries.recipients)[0]["recipient_id"]
    return client.post("/ledger/recipients/request/", {
        "command_id": new_command_id(), "recipient_id": recipient, "payout_address": NEW_ADDRESS,
        "evidence": "a message signed by the new address"})


def assert_ended_and_others_kept(signed_in, ledger, admins) -> None:
    before, head = signed_in["finance"], ledger.head()
    refused = address_change(before, ledger)  # its first request since the change
    assert refused.status_code == 302 and refused["Location"].startswith("/login/")
    assert ledger.head() == head and signed_out(before)
    # Everyone else's sessions go on, and the same form from one of them is accepted.
    assert not signed_out(signed_in["finance2"]) and not signed_out(signed_in["ops"])
    assert not signed_out(admins["admin"]) and not signed_out(admins["admin2"])
    assert address_change(signed_in["finance2"], ledger).status_code == 302
    assert ledger.head().sequence == head.sequence + 1


@pytest.mark.parametrize("change", ["reset_authenticator", "reset_password", "remove_role:finance", "deactivate"])
def test_an_approved_staff_change_to_a_finance_users_proof_ends_their_sessions(change, signed_in, admins, ledger):
    assert not signed_out(signed_in["finance"])
    approve(admins["admin2"], request_change(admins["admin"], STAFF["finance"], change), STAFF["admin2"])
    assert_ended_and_others_kept(signed_in, ledger, admins)


def test_a_role_removed_by_one_admin_ends_that_users_sessions(signed_in, admins, users, ledger):
    admins["admin"].post(f"/ledger/accounts/{seal('account', STAFF['ops'])}/", {
        "command_id": new_command_id(), "roles": [], "revision": "1", "active": "on"})
    assert not users["ops"].groups.exists()
    assert signed_out(signed_in["ops"])
    assert not signed_out(signed_in["finance"]) and not signed_out(admins["admin"])


def test_a_deactivation_by_one_admin_ends_that_users_sessions(signed_in, admins, users, ledger):
    admins["admin"].post(f"/ledger/accounts/{seal('account', STAFF['ops'])}/", {
        "command_id": new_command_id(), "roles": ["ops"], "revision": "1"})
    users["ops"].refresh_from_db()
    assert not users["ops"].is_active
    assert signed_out(signed_in["ops"])
    assert not signed_out(signed_in["finance"]) and not signed_out(admins["admin"])


def test_a_session_opened_between_an_authenticator_reset_and_enrolment_ends_when_enrolment_completes(
        admins, users, ledger, mailoutbox):
    password = issue_credentials(users["finance"]).password
    approve(admins["admin2"], request_change(admins["admin"], STAFF["finance"], "reset_authenticator"),
            STAFF["admin2"])
    between = Client()
    between.post("/login/", {"username": STAFF["finance"], "password": password})
    assert not signed_out(between)
    owner = Client()
    owner.get(enrolment_link(mailoutbox, STAFF["finance"]))
    owner.get("/enrol/")
    device = TOTPDevice.objects.get(user=users["finance"], confirmed=False)
    owner.post("/enrol/", {"current_password": password, "otp_token": f"{TOTP(device.bin_key).token():06d}"})
    assert signed_out(between)
    assert not signed_out(owner)  # the owner's new session, signed in by enrolling
