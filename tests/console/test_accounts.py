"""Accounts (admin): provisioning staff and domain accounts, changing roles, deactivating."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.layout import STATE
from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.services.accounts import identity_digest
from tests.console.conftest import STAFF


def provision(client, **fields):
    data = {"command_id": new_command_id(), "kind": "staff", "account_id": "fin-3", "identity": "fin3@porto.test",
            "roles": ["finance"], "payout_address": "", **fields}
    return client.post("/ledger/accounts/new/", data)


def test_provisioning_staff_registers_the_account_and_creates_a_user_who_can_sign_in(client_as, ledger):
    head = ledger.head().sequence
    response = provision(client_as("admin"))
    assert response.status_code == 200
    page = response.content.decode()
    password = re.search(r'id="new-password">([^<]+)<', page).group(1)
    account = ledger.get(STATE, "account/fin-3").data
    assert account["roles"] == ["finance"] and account["kind"] == "staff"
    assert account["identity_digest"] == identity_digest("staff", "fin3@porto.test")
    assert ledger.get(STATE, "actor/fin-3").data == {"roles": ["finance"], "status": "active"}
    assert ledger.head().sequence == head + 1
    entry = ledger.journal_entry(head + 1)["envelope"]
    assert (entry["command_type"], entry["actor_id"]) == ("RegisterAccount", STAFF["admin"])
    user = User.objects.get(username="fin-3")
    assert user.check_password(password) and user.is_staff and user.is_active
    assert [group.name for group in user.groups.all()] == ["finance"]
    secret = re.search(r'id="new-totp-secret">([^<]+)<', page).group(1)
    device = TOTPDevice.objects.get(user=user)
    assert device.confirmed and secret
    assert device.verify_token(TOTP(device.bin_key).token())


def test_provisioning_an_artist_records_the_payout_address_and_no_user(client_as, ledger):
    address = "0x" + "ab" * 32
    response = provision(client_as("admin"), kind="artist", account_id="acct-artist-9", identity="provider|9",
                         roles=[], payout_address=address)
    assert response.status_code == 302
    assert response["Location"] == f"/ledger/accounts/{seal('account', 'acct-artist-9')}/"
    assert ledger.get(STATE, "recipient/acct-artist-9").data["payout_address"] == address
    assert not User.objects.filter(username="acct-artist-9").exists()


def test_a_double_submitted_provisioning_form_registers_once(client_as, ledger):
    client = client_as("admin")
    command_id = new_command_id()
    head = ledger.head().sequence
    first = provision(client, command_id=command_id)
    second = provision(client, command_id=command_id)
    assert ledger.head().sequence == head + 1
    assert "id=\"new-password\"" in first.content.decode()
    assert second.status_code == 302
    messages = [str(m) for m in second.wsgi_request._messages]
    assert any("already submitted" in text for text in messages)


def test_reusing_a_forms_command_id_for_another_request_is_refused(client_as, ledger):
    client = client_as("admin")
    command_id = new_command_id()
    provision(client, command_id=command_id)
    head = ledger.head()
    response = provision(client, command_id=command_id, account_id="fin-4", identity="fin4@porto.test")
    assert ledger.head() == head
    assert ledger.get(STATE, "account/fin-4") is None
    assert "already submitted" in " ".join(str(m) for m in response.wsgi_request._messages)


def test_a_rejected_provisioning_shows_the_reason_and_offers_a_new_command_id(client_as, ledger):
    client = client_as("admin")
    provision(client)
    head = ledger.head().sequence
    response = provision(client, account_id="fin-5")  # same identity as fin-3
    page = response.content.decode()
    assert ledger.head().sequence == head + 1  # the rejection is journalled
    assert ledger.journal_entry(head + 1)["result"]["code"] == "ALREADY_EXISTS"
    assert "Not allowed: ALREADY_EXISTS" in page
    assert 'value="fin-5"' in page
    assert ledger.get(STATE, "account/fin-5") is None


def test_deactivating_a_staff_account_deactivates_the_actor_and_the_user(client_as, users, ledger):
    handle = seal("account", STAFF["ops"])
    response = client_as("admin").post(f"/ledger/accounts/{handle}/",
                                       {"command_id": new_command_id(), "roles": ["ops"], "revision": "1"})
    assert response.status_code == 302
    assert ledger.get(STATE, f"actor/{STAFF['ops']}").data["status"] == "deactivated"
    assert ledger.get(STATE, f"account/{STAFF['ops']}").data["status"] == "deactivated"
    users["ops"].refresh_from_db()
    assert not users["ops"].is_active


def test_changing_roles_is_checked_against_the_revision_the_admin_saw(client_as, ledger):
    handle = seal("account", STAFF["auditor"])
    client = client_as("admin")
    page = client.get(f"/ledger/accounts/{handle}/").content.decode()
    command_id = re.search(r'name="command_id" value="([^"]+)"', page).group(1)
    client.post(f"/ledger/accounts/{handle}/", {"command_id": new_command_id(), "roles": ["auditor", "ops"],
                                                "revision": "1", "active": "on"})
    head = ledger.head().sequence
    stale = client.post(f"/ledger/accounts/{handle}/", {"command_id": command_id, "roles": ["auditor"],
                                                        "revision": "1", "active": "on"})
    assert stale.status_code == 302
    assert ledger.journal_entry(head + 1)["result"]["code"] == "STALE_REVISION"
    assert ledger.get(STATE, f"actor/{STAFF['auditor']}").data["roles"] == ["auditor", "ops"]


def test_an_admin_cannot_change_their_own_account_and_is_told_why(client_as, ledger):
    handle = seal("account", STAFF["admin"])
    client = client_as("admin")
    assert "You cannot change your own account" in client.get(f"/ledger/accounts/{handle}/").content.decode()
    head = ledger.head().sequence
    client.post(f"/ledger/accounts/{handle}/",
                {"command_id": new_command_id(), "roles": [], "active": "on", "revision": "1"})
    assert ledger.journal_entry(head + 1)["result"]["code"] == "FOUR_EYES_REQUIRED"
    assert ledger.get(STATE, f"actor/{STAFF['admin']}").data["roles"] == ["admin"]


def test_the_account_list_filters_and_pages(client_as):
    client = client_as("auditor")
    artists = client.get("/ledger/accounts/", {"kind": "artist"}).content.decode()
    assert "demo-artist-00" in artists and "demo-listener" not in artists
    first = client.get("/ledger/accounts/", {"kind": "listener"}).content.decode()
    second = client.get("/ledger/accounts/", {"kind": "listener", "page": "2"}).content.decode()
    assert "page 1 of 1 · 20 in all" in first and "demo-listener-00019" in first
    assert "demo-listener-00019" not in second
    staff = client.get("/ledger/accounts/", {"role": "finance"}).content.decode()
    assert "demo-finance-1" in staff and "demo-ops-1" not in staff
