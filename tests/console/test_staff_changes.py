"""Staff changes in the console: one admin requests, another approves with a code; only then Django follows."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.layout import STATE
from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.models import AppliedStaffChange
from porto_console.console.services import staff_changes
from porto_console.console.services.users import issue_credentials
from porto_console.ledger import owner
from tests.console.conftest import STAFF, code_for, enrolment_link


@pytest.fixture
def admins(users, client_as):
    """Both demo admins signed in, each with an authenticator."""
    for name in ("admin", "admin2"):
        issue_credentials(users[name])
    return {name: client_as(name) for name in ("admin", "admin2")}


def request_change(client, account_id: str, choice: str) -> str:
    """Request ``choice`` for ``account_id`` on its page; returns the new change's handle."""
    return seal("staff-change", requested(client, account_id, choice))


def requested(client, account_id: str, choice: str) -> str:
    """Request ``choice`` for ``account_id`` on its page; returns the new change's ID."""
    command_id = new_command_id()
    client.post(f"/ledger/accounts/{seal('account', account_id)}/request/", {"command_id": command_id,
                                                                              "change": choice})
    change_id = staff_changes.change_id_for(command_id)
    assert owner().get(STATE, f"staff_change/{change_id}").data["status"] == "pending"
    return change_id


def approve(client, handle: str, username: str, code: str | None = None):
    return client.post(f"/ledger/staff-changes/{handle}/approve/",
                       {"command_id": new_command_id(), "otp_token": code or code_for(username)}, follow=True)


def test_a_finance_grant_takes_a_second_admin_with_a_code_and_then_the_user_gets_the_group(admins, users, ledger):
    handle = request_change(admins["admin"], STAFF["ops"], "grant_role:finance")
    page = admins["admin"].get(f"/ledger/staff-changes/{handle}/").content.decode()
    assert "You requested this change: another admin must decide it" in page and "Approve change" not in page
    head = ledger.head().sequence
    forged = approve(admins["admin"], handle, STAFF["admin"])
    assert ledger.journal_entry(head + 1)["result"]["code"] == "FOUR_EYES_REQUIRED"
    assert "Not allowed: FOUR_EYES_REQUIRED" in forged.content.decode()
    assert "finance" not in users["ops"].groups.values_list("name", flat=True)

    assert approve(admins["admin2"], handle, STAFF["admin2"]).status_code == 200
    assert ledger.get(STATE, f"actor/{STAFF['ops']}").data["roles"] == ["finance", "ops"]
    assert sorted(users["ops"].groups.values_list("name", flat=True)) == ["finance", "ops"]
    decision = ledger.journal_entry(ledger.head().sequence)["envelope"]
    assert decision["actor_id"] == STAFF["admin2"] and "step_up" in decision["payload"]


def test_a_wrong_code_submits_nothing(admins, ledger):
    handle = request_change(admins["admin"], STAFF["ops"], "grant_role:finance")
    head = ledger.head()
    response = approve(admins["admin2"], handle, STAFF["admin2"], code="000000")
    assert "The authenticator code is not valid" in response.content.decode()
    assert ledger.head() == head


def test_a_password_reset_clears_it_and_only_the_owner_sets_a_new_one(admins, users, ledger, mailoutbox):
    finance = users["finance"]
    issue_credentials(finance)
    handle = request_change(admins["admin"], STAFF["finance"], "reset_password")
    approve(admins["admin2"], handle, STAFF["admin2"])
    finance.refresh_from_db()
    assert not finance.has_usable_password()
    link = enrolment_link(mailoutbox, STAFF["finance"])
    assert mailoutbox[-1].to == ["demo-finance-1@demo.porto.invalid"]
    owner_client = Client()
    owner_client.get(link)
    page = owner_client.get("/enrol/").content.decode()
    assert 'id="totp-secret"' not in page  # only the password was reset: the authenticator stays
    head = ledger.head().sequence
    owner_client.post("/enrol/", {"password1": "another long passphrase 9", "password2": "another long passphrase 9",
                                  "otp_token": code_for(STAFF["finance"])})
    entry = ledger.journal_entry(head + 1)["envelope"]
    assert (entry["actor_id"], entry["payload"]["factors"]) == (STAFF["finance"], ["password"])
    signed_in = Client()
    signed_in.post("/login/", {"username": STAFF["finance"], "password": "another long passphrase 9"})
    assert signed_in.session["_auth_user_id"] == str(finance.pk)


def test_an_authenticator_reset_needs_the_current_password_and_a_code_from_the_new_device(admins, users, ledger,
                                                                                        mailoutbox):
    finance = users["finance"]
    password = issue_credentials(finance).password
    handle = request_change(admins["admin"], STAFF["finance"], "reset_authenticator")
    approve(admins["admin2"], handle, STAFF["admin2"])
    assert not TOTPDevice.objects.filter(user=finance).exists()
    owner_client = Client()
    owner_client.get(enrolment_link(mailoutbox, STAFF["finance"]))
    assert 'id="totp-secret"' in owner_client.get("/enrol/").content.decode()
    device = TOTPDevice.objects.get(user=finance, confirmed=False)
    wrong = owner_client.post("/enrol/", {"current_password": "a guess", "otp_token": f"{TOTP(device.bin_key).token():06d}"})
    assert "not your current password" in wrong.content.decode()
    owner_client.post("/enrol/", {"current_password": password, "otp_token": f"{TOTP(device.bin_key).token():06d}"})
    device.refresh_from_db()
    assert device.confirmed
    assert ledger.get(STATE, f"staff_credentials/{STAFF['finance']}").data["status"] == "enrolled"


def test_an_approval_the_console_did_not_finish_is_finished_later(admins, users, ledger, monkeypatch):
    change_id = requested(admins["admin"], STAFF["auditor"], "grant_role:finance")

    def crash(*_):
        raise RuntimeError("the console stopped before carrying the change out")

    monkeypatch.setattr(staff_changes, "_apply", crash)
    client = Client(raise_request_exception=False)
    client.force_login(users["admin2"])
    assert approve(client, seal("staff-change", change_id), STAFF["admin2"]).status_code == 500
    assert ledger.get(STATE, f"actor/{STAFF['auditor']}").data["roles"] == ["auditor", "finance"]
    assert "finance" not in users["auditor"].groups.values_list("name", flat=True)
    monkeypatch.undo()
    assert change_id in staff_changes.apply_approved()  # what the launcher runs at every start
    assert sorted(users["auditor"].groups.values_list("name", flat=True)) == ["auditor", "finance"]
    assert AppliedStaffChange.objects.filter(change_id=change_id).exists()
    assert change_id not in staff_changes.apply_approved()


def test_a_declined_change_changes_nothing(admins, users, ledger):
    handle = request_change(admins["admin"], STAFF["ops"], "grant_role:finance")
    admins["admin2"].post(f"/ledger/staff-changes/{handle}/decline/",
                          {"command_id": new_command_id(), "reason": "identity_not_confirmed"})
    assert ledger.get(STATE, f"actor/{STAFF['ops']}").data["roles"] == ["ops"]
    assert list(users["ops"].groups.values_list("name", flat=True)) == ["ops"]
    page = admins["admin"].get("/ledger/staff-changes/", {"status": "declined"}).content.decode()
    assert "Grant the finance role of demo-ops-1" in page


def test_the_auditor_reads_staff_changes_but_cannot_decide(admins, client_as, ledger):
    handle = request_change(admins["admin"], STAFF["ops"], "grant_role:finance")
    auditor = client_as("auditor")
    assert "needs the admin role" in auditor.get(f"/ledger/staff-changes/{handle}/").content.decode()
    head = ledger.head()
    assert auditor.post(f"/ledger/staff-changes/{handle}/approve/", {"command_id": new_command_id(),
                                                                     "otp_token": "123456"}).status_code == 403
    assert ledger.head() == head
    assert User.objects.get(username=STAFF["ops"]).groups.count() == 1


def test_reactivating_an_account_takes_a_second_admin(admins, users, ledger):
    handle = seal("account", STAFF["ops"])
    admins["admin"].post(f"/ledger/accounts/{handle}/", {"command_id": new_command_id(), "roles": ["ops"],
                                                         "revision": "1"})  # one admin may deactivate
    users["ops"].refresh_from_db()
    assert not users["ops"].is_active
    head = ledger.head().sequence
    admins["admin"].post(f"/ledger/accounts/{handle}/", {"command_id": new_command_id(), "roles": ["ops"],
                                                         "revision": "2", "active": "on"})
    assert ledger.journal_entry(head + 1)["result"]["code"] == "FOUR_EYES_REQUIRED"
    approve(admins["admin2"], request_change(admins["admin"], STAFF["ops"], "reactivate"), STAFF["admin2"])
    users["ops"].refresh_from_db()
    assert users["ops"].is_active and ledger.get(STATE, f"actor/{STAFF['ops']}").data["status"] == "active"


def test_deactivating_a_finance_user_takes_a_second_admin_and_keeps_their_role(admins, users, ledger):
    approve(admins["admin2"], request_change(admins["admin"], STAFF["finance"], "deactivate"), STAFF["admin2"])
    assert ledger.get(STATE, f"actor/{STAFF['finance']}").data == {"roles": ["finance"], "status": "deactivated"}
    users["finance"].refresh_from_db()
    assert not users["finance"].is_active


def test_a_deactivation_answered_again_after_a_reactivation_leaves_the_user_as_the_ledger_holds_it(admins, users,
                                                                                                    ledger):
    url = f"/ledger/accounts/{seal('account', STAFF['ops'])}/"
    deactivation = {"command_id": new_command_id(), "roles": ["ops"], "revision": "1"}
    admins["admin"].post(url, deactivation)
    approve(admins["admin2"], request_change(admins["admin"], STAFF["ops"], "reactivate"), STAFF["admin2"])
    head = ledger.head()
    again = admins["admin"].post(url, deactivation, follow=True)
    assert "already submitted" in again.content.decode() and ledger.head() == head
    assert ledger.get(STATE, f"account/{STAFF['ops']}").data["status"] == "active"
    users["ops"].refresh_from_db()
    assert users["ops"].is_active
