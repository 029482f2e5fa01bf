"""Accounts (admin): provisioning with enrolment links, changing roles, deactivating; no secret on any screen."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.domain.identity import keyed_identity
from ledger_engine.layout import STATE
from ledger_engine.selectors import staff_queries
from porto_console.console import commands
from porto_console.console.commands import new_command_id
from porto_console.console.services import accounts as service
from porto_console.console.services import enrolment, staff_changes
from porto_console.console.handles import seal
from porto_console.console.models import EnrolmentLink
from tests.console.conftest import STAFF, enrolment_link


def provision(client, **fields):
    data = {"command_id": new_command_id(), "kind": "staff", "account_id": "ops-3", "identity": "ops3@porto.test",
            "roles": ["ops"], "payout_address": "", **fields}
    return client.post("/ledger/accounts/new/", data, follow=True)


def pending_code(username: str) -> str:
    """The code the new owner's authenticator app shows, from the device being enrolled."""
    device = TOTPDevice.objects.get(user__username=username, confirmed=False)
    return f"{TOTP(device.bin_key).token():06d}"


def test_provisioning_staff_shows_no_secret_and_emails_the_owner_a_link(client_as, ledger, mailoutbox):
    head = ledger.head().sequence
    response = provision(client_as("admin"))
    page = response.content.decode()
    account = ledger.get(STATE, "account/ops-3").data
    assert {name: account[name] for name in ("identity_digest", "identity_scheme")} == keyed_identity(
        settings.IDENTITY_KEY.encode(), "staff", "ops3@porto.test")
    assert ledger.get(STATE, "actor/ops-3").data == {"roles": ["ops"], "status": "active"}
    provisioned, link_sent = (ledger.journal_entry(head + n)["envelope"] for n in (1, 2))
    assert (provisioned["command_type"], provisioned["actor_id"]) == ("RegisterAccount", STAFF["admin"])
    assert (link_sent["command_type"], link_sent["actor_id"], link_sent["payload"]["change"]) == (
        "RecordProfileChange", STAFF["admin"], "enrolment_link_issued")
    user = User.objects.get(username="ops-3")
    assert (user.is_staff, user.is_active, user.is_superuser, user.has_usable_password()) == (True, True, False, False)
    assert not TOTPDevice.objects.filter(user=user).exists()
    [mail] = mailoutbox
    assert mail.to == ["ops3@porto.test"]
    token = enrolment_link(mailoutbox, "ops-3").rsplit("/", 2)[-2]
    assert token not in page and "otpauth://" not in page and 'type="password"' not in page
    assert re.search(r'id="enrolment-status">pending: link sent to o\*\*\*@porto\.test', page)


def test_the_owner_sets_their_own_password_and_authenticator_through_the_link_once(client_as, ledger, mailoutbox):
    provision(client_as("admin"))
    link = enrolment_link(mailoutbox, "ops-3")
    owner = Client()
    assert owner.get(link)["Location"] == "/enrol/"
    page = owner.get("/enrol/").content.decode()
    assert 'id="totp-secret"' in page and "<svg" in page
    head = ledger.head().sequence
    response = owner.post("/enrol/", {"password1": "a long new passphrase 7", "password2": "a long new passphrase 7",
                                      "otp_token": pending_code("ops-3")})
    assert response.status_code == 302
    entry = ledger.journal_entry(head + 1)["envelope"]
    assert (entry["actor_id"], entry["payload"]["change"], entry["payload"]["factors"]) == (
        "ops-3", "enrolment_completed", ["authenticator", "password"])
    assert ledger.get(STATE, "staff_credentials/ops-3").data["status"] == "enrolled"
    user = User.objects.get(username="ops-3")
    assert user.check_password("a long new passphrase 7")
    assert TOTPDevice.objects.get(user=user).confirmed
    assert Client().get(link).status_code == 403  # spent by its first opening
    account_page = client_as("admin").get(f"/ledger/accounts/{seal('account', 'ops-3')}/").content.decode()
    assert 'id="enrolment-status">enrolled' in account_page


def test_an_expired_link_opens_nothing(client_as, ledger, mailoutbox, settings):
    settings.ENROLMENT_LINK_TTL_S = -1
    provision(client_as("admin"))
    response = Client().get(enrolment_link(mailoutbox, "ops-3"))
    assert response.status_code == 404 and "not valid" in response.content.decode()


def test_a_link_used_to_guess_codes_dies(client_as, ledger, mailoutbox):
    provision(client_as("admin"))
    owner = Client()
    owner.get(enrolment_link(mailoutbox, "ops-3"))
    for _ in range(5):
        owner.post("/enrol/", {"password1": "a long new passphrase 7", "password2": "a long new passphrase 7",
                               "otp_token": "000000"})
    assert owner.get("/enrol/").status_code == 404
    assert EnrolmentLink.objects.get(user__username="ops-3").revoked_at is not None


@pytest.mark.parametrize("role", ["finance", "admin"])
def test_with_two_admins_ticking_finance_or_admin_provisions_without_it_and_requests_it_of_another_admin(
        client_as, ledger, role):
    form = client_as("admin").get("/ledger/accounts/new/").content.decode()
    assert f'value="{role}"' in form and "requests a staff change granting it" in form
    data = {"command_id": new_command_id(), "kind": "staff", "account_id": "ops-3", "identity": "ops3@porto.test",
            "roles": ["ops", role], "payout_address": ""}
    page = client_as("admin").post("/ledger/accounts/new/", data, follow=True).content.decode()
    assert ledger.get(STATE, "actor/ops-3").data == {"roles": ["ops"], "status": "active"}
    [change] = ledger.read(lambda view: staff_queries.changes(view, account_id="ops-3"))
    assert (change["change"], change["status"], change["requested_by"]) == (
        {"kind": "grant_role", "account_id": "ops-3", "role": role}, "pending", STAFF["admin"])
    approvers = re.search(rf"Granting {role} to ops-3 is requested: another admin \(([^)]*)\) approves it", page)
    assert approvers is not None and STAFF["admin2"] in approvers[1].split(", ")
    assert STAFF["admin"] not in approvers[1].split(", ")  # the requester cannot approve their own request
    head = ledger.head()
    client_as("admin").post("/ledger/accounts/new/", data, follow=True)  # the same form, answered again
    assert ledger.head() == head and len(ledger.read(lambda view: staff_queries.changes(view, account_id="ops-3"))) == 1


def test_with_two_admins_a_worker_ticked_for_finance_is_refused_and_nothing_is_filed(client_as, ledger):
    head = ledger.head()
    page = provision(client_as("admin"), kind="worker", account_id="ingest-9", identity="host|ingest-9",
                     roles=["finance"]).content.decode()
    assert "A worker account cannot hold finance." in page
    assert ledger.head() == head and ledger.get(STATE, "account/ingest-9") is None


@pytest.mark.parametrize("roles, status, offered", [
    (["ops"], "active", ["grant_role:finance", "grant_role:admin", "reset_password", "reset_authenticator",
                         "deactivate"]),
    (["finance"], "active", ["remove_role:finance", "reset_password", "reset_authenticator", "deactivate"]),
    (["finance"], "deactivated", ["remove_role:finance", "reactivate"]),
])
def test_a_staff_change_is_offered_only_where_it_would_change_something(roles, status, offered):
    assert [choice for choice, _ in staff_changes.requests_for(roles, status == "active")] == offered


def test_the_account_page_offers_no_reactivation_of_an_active_account(client_as, ledger):
    page = client_as("admin").get(f"/ledger/accounts/{seal('account', STAFF['finance2'])}/").content.decode()
    request_form = page[page.index('id="request"'):]
    assert 'value="deactivate"' in request_form and 'value="reactivate"' not in request_form
    assert 'value="grant_role:finance"' not in request_form and 'value="remove_role:finance"' in request_form


def test_provisioning_staff_with_an_adapter_or_worker_role_is_refused_and_mails_no_link(client_as, ledger,
                                                                                           mailoutbox):
    head = ledger.head()
    page = provision(client_as("admin"), account_id="sock-1", identity="someone@porto.test",
                     roles=["coordinator", "ingest", "observer", "signer"]).content.decode()
    assert "A staff account cannot hold coordinator, ingest, observer, signer." in page
    assert ledger.head() == head and ledger.get(STATE, "actor/sock-1") is None
    assert not User.objects.filter(username="sock-1").exists() and mailoutbox == []


def test_a_worker_account_holds_an_adapter_role_and_gets_no_user_and_no_link(client_as, ledger, mailoutbox):
    response = client_as("admin").post("/ledger/accounts/new/", {
        "command_id": new_command_id(), "kind": "worker", "account_id": "ingest-9", "identity": "host|ingest-9",
        "roles": ["ingest"], "payout_address": ""})
    assert response.status_code == 302
    assert ledger.get(STATE, "actor/ingest-9").data == {"roles": ["ingest"], "status": "active"}
    assert not User.objects.filter(username="ingest-9").exists() and mailoutbox == []


def provision_worker(client, account_id: str, roles: list[str]):
    return client.post("/ledger/accounts/new/", {
        "command_id": new_command_id(), "kind": "worker", "account_id": account_id, "identity": f"host|{account_id}",
        "roles": roles, "payout_address": ""}, follow=True)


def test_provisioning_a_worker_that_signs_and_observes_is_refused_with_the_reason(client_as, ledger):
    head = ledger.head()
    page = provision_worker(client_as("admin"), "payments-9", ["dispatcher", "observer", "signer"]).content.decode()
    assert "An account cannot hold observer and signer together: whoever signs a payment does not also attest" in page
    assert ledger.head() == head and ledger.get(STATE, "actor/payments-9") is None


def test_the_ledger_refuses_a_worker_that_signs_and_observes_whatever_the_form_says(client_as, ledger):
    """The form's check is a courtesy: the provisioning command itself is refused with ROLE_CONFLICT."""
    outcome = commands.submit(STAFF["admin"], new_command_id(), service.provision(
        account_id="payments-9", kind="worker", identity="host|payments-9", roles=["dispatcher", "observer", "signer"]))
    assert (outcome.outcome, outcome.code) == ("rejected", "ROLE_CONFLICT")
    assert ledger.get(STATE, "actor/payments-9") is None


def test_a_workers_change_form_explains_and_refuses_adding_observer_to_a_signer(client_as, ledger):
    client = client_as("admin")
    assert provision_worker(client, "payments-9", ["dispatcher", "signer"]).status_code == 200
    handle = seal("account", "payments-9")
    page = client.get(f"/ledger/accounts/{handle}/").content.decode()
    assert "records the chain&#x27;s answer as another (dispatcher, observer)" in page
    head = ledger.head()
    revision = ledger.get(STATE, "account/payments-9").revision
    page = client.post(f"/ledger/accounts/{handle}/", {"command_id": new_command_id(), "revision": str(revision),
                                                       "roles": ["dispatcher", "observer", "signer"], "active": "on"},
                       follow=True).content.decode()
    assert "An account cannot hold observer and signer together" in page
    assert ledger.head() == head
    assert ledger.get(STATE, "actor/payments-9").data == {"roles": ["dispatcher", "signer"], "status": "active"}


def test_a_staff_accounts_change_form_offers_a_persons_roles_only_and_refuses_an_adapters(client_as, ledger):
    handle = seal("account", STAFF["finance"])
    client = client_as("admin")
    page = client.get(f"/ledger/accounts/{handle}/").content.decode()
    assert 'value="ops"' in page and 'value="ingest"' not in page and 'value="signer"' not in page
    head = ledger.head()
    revision = ledger.get(STATE, f"account/{STAFF['finance']}").revision
    client.post(f"/ledger/accounts/{handle}/", {"command_id": new_command_id(), "roles": ["ingest"],
                                                "revision": str(revision), "active": "on"})
    assert ledger.head() == head
    assert ledger.get(STATE, f"actor/{STAFF['finance']}").data == {"roles": ["finance"], "status": "active"}


def test_the_change_form_cannot_grant_finance_even_when_forged(client_as, ledger):
    handle = seal("account", STAFF["ops"])
    head = ledger.head()
    client_as("admin").post(f"/ledger/accounts/{handle}/", {"command_id": new_command_id(), "roles": ["finance", "ops"],
                                                            "revision": "1", "active": "on"})
    assert ledger.head() == head
    assert ledger.get(STATE, f"actor/{STAFF['ops']}").data["roles"] == ["ops"]


def test_an_enrolled_user_gets_no_link_from_one_admin(client_as, ledger, mailoutbox):
    head = ledger.head()
    response = client_as("admin").post(f"/ledger/accounts/{seal('account', STAFF['finance'])}/link/",
                                       {"command_id": new_command_id()}, follow=True)
    assert "has enrolled already" in response.content.decode()
    assert ledger.head() == head and mailoutbox == []


def test_a_link_form_posted_again_for_another_account_is_refused_with_its_code(client_as, ledger, mailoutbox):
    client = client_as("admin")
    provision(client)
    provision(client, account_id="ops-4", identity="ops4@porto.test")
    command_id = new_command_id()
    client.post(f"/ledger/accounts/{seal('account', 'ops-3')}/link/", {"command_id": command_id})
    mailed, head = len(mailoutbox), ledger.head()
    response = client.post(f"/ledger/accounts/{seal('account', 'ops-4')}/link/", {"command_id": command_id},
                           follow=True)
    assert response.status_code == 200 and "COMMAND_ID_CONFLICT" in response.content.decode()
    assert ledger.head() == head and len(mailoutbox) == mailed


def test_another_admin_posting_a_link_forms_id_sends_a_link_of_their_own(client_as, ledger, mailoutbox):
    """A link's ID is its sender's, as the command's is: the ID in the journal names nobody else's link."""
    admin, admin2 = client_as("admin"), client_as("admin2")
    provision(admin)
    provision(admin, account_id="ops-4", identity="ops4@porto.test")
    command_id = new_command_id()
    admin.post(f"/ledger/accounts/{seal('account', 'ops-3')}/link/", {"command_id": command_id})
    mailed = len(mailoutbox)
    admin2.post(f"/ledger/accounts/{seal('account', 'ops-4')}/link/", {"command_id": command_id})
    assert len(mailoutbox) == mailed + 1 and mailoutbox[-1].to == ["ops4@porto.test"]
    links = {name: ledger.get(STATE, f"staff_credentials/{name}").data["link_id"] for name in ("ops-3", "ops-4")}
    assert links["ops-3"] != links["ops-4"]
    assert {link.user.username for link in EnrolmentLink.objects.filter(link_id__in=links.values())} == {
        "ops-3", "ops-4"}
    assert all(EnrolmentLink.objects.get(link_id=link_id).open for link_id in links.values())


def test_of_two_links_recorded_at_once_only_the_one_the_ledger_names_last_is_made_and_mailed(client_as, users,
                                                                                              ledger, mailoutbox):
    provision(client_as("admin"))
    user = User.objects.get(username="ops-3")
    first, second = "link-first", "link-second"
    for sender, link_id in ((STAFF["admin"], first), (STAFF["admin2"], second)):  # both recorded before either is made
        assert commands.submit(sender, new_command_id(), enrolment.link_request("ops-3", link_id)).accepted
    mailed = len(mailoutbox)
    with pytest.raises(enrolment.EnrolmentRefused):
        enrolment.create_link(user, first, issued_by=STAFF["admin"])
    enrolment.create_link(user, second, issued_by=STAFF["admin2"])
    assert len(mailoutbox) == mailed + 1
    assert [link.link_id for link in EnrolmentLink.objects.filter(user=user) if link.open] == [second]


def test_a_double_submitted_provisioning_form_registers_once(client_as, ledger, mailoutbox):
    client = client_as("admin")
    command_id = new_command_id()
    head = ledger.head().sequence
    provision(client, command_id=command_id)
    second = provision(client, command_id=command_id)
    assert ledger.head().sequence == head + 2  # the account and its first link, once
    assert len(mailoutbox) == 1
    assert "already submitted" in second.content.decode()
    assert Client().get(enrolment_link(mailoutbox, "ops-3"))["Location"] == "/enrol/"  # the mailed link still opens
    assert EnrolmentLink.objects.get(user__username="ops-3").open


def test_reusing_a_forms_command_id_for_another_request_is_refused(client_as, ledger):
    client = client_as("admin")
    command_id = new_command_id()
    provision(client, command_id=command_id)
    head = ledger.head()
    response = provision(client, command_id=command_id, account_id="ops-4", identity="ops4@porto.test")
    assert ledger.head() == head
    assert ledger.get(STATE, "account/ops-4") is None
    assert not User.objects.filter(username="ops-4").exists()
    page = response.content.decode()
    assert "COMMAND_ID_CONFLICT" in page and "already submitted" not in page


def test_a_rejected_provisioning_shows_the_reason_and_offers_a_new_command_id(client_as, ledger):
    client = client_as("admin")
    provision(client)
    head = ledger.head().sequence
    page = provision(client, account_id="ops-5").content.decode()  # same identity as ops-3
    assert ledger.head().sequence == head + 1  # the rejection is journalled
    assert ledger.journal_entry(head + 1)["result"]["code"] == "ALREADY_EXISTS"
    assert "Not allowed: ALREADY_EXISTS" in page
    assert 'value="ops-5"' in page
    assert ledger.get(STATE, "account/ops-5") is None


def test_a_staff_identity_is_a_work_email(client_as, ledger):
    head = ledger.head()
    page = provision(client_as("admin"), identity="not an email").content.decode()
    assert "their work email" in page and ledger.head() == head


def test_provisioning_an_artist_records_the_payout_address_and_no_user(client_as, ledger):
    address = "0x" + "ab" * 32
    response = client_as("admin").post("/ledger/accounts/new/", {
        "command_id": new_command_id(), "kind": "artist", "account_id": "acct-artist-9", "identity": "provider|9",
        "roles": [], "payout_address": address})
    assert response.status_code == 302
    assert response["Location"] == f"/ledger/accounts/{seal('account', 'acct-artist-9')}/"
    assert ledger.get(STATE, "recipient/acct-artist-9").data["payout_address"] == address
    assert not User.objects.filter(username="acct-artist-9").exists()


def test_deactivating_a_staff_account_deactivates_the_actor_and_the_user(client_as, users, ledger):
    handle = seal("account", STAFF["ops"])
    response = client_as("admin").post(f"/ledger/accounts/{handle}/",
                                       {"command_id": new_command_id(), "roles": ["ops"], "revision": "1"})
    assert response.status_code == 302
    assert ledger.get(STATE, f"actor/{STAFF['ops']}").data["status"] == "deactivated"
    assert ledger.get(STATE, f"account/{STAFF['ops']}").data["status"] == "deactivated"
    users["ops"].refresh_from_db()
    assert not users["ops"].is_active


@pytest.mark.parametrize("target", ["ops", "auditor"])
def test_a_deactivation_reposted_as_another_change_moves_neither_the_ledger_nor_a_user(client_as, users, ledger,
                                                                                       target):
    """The same account turned active again, or another account: the view acts on nothing the ledger did not judge."""
    client = client_as("admin")
    command_id = new_command_id()
    client.post(f"/ledger/accounts/{seal('account', STAFF['ops'])}/",
                {"command_id": command_id, "roles": ["ops"], "revision": "1"})
    groups = {name: sorted(users[name].groups.values_list("name", flat=True)) for name in ("ops", "auditor")}
    head = ledger.head()
    response = client.post(f"/ledger/accounts/{seal('account', STAFF[target])}/",
                           {"command_id": command_id, "roles": ["ops", "auditor"], "revision": "1", "active": "on"})
    assert "COMMAND_ID_CONFLICT" in response.content.decode()
    assert ledger.head() == head
    for name in ("ops", "auditor"):
        users[name].refresh_from_db()
        assert sorted(users[name].groups.values_list("name", flat=True)) == groups[name]
    assert (users["ops"].is_active, users["auditor"].is_active) == (False, True)


def test_a_provisioning_answered_again_after_a_deactivation_leaves_the_user_deactivated(client_as, ledger,
                                                                                         mailoutbox):
    client = client_as("admin")
    command_id = new_command_id()
    provision(client, command_id=command_id)
    client.post(f"/ledger/accounts/{seal('account', 'ops-3')}/",
                {"command_id": new_command_id(), "roles": ["ops"], "revision": "1"})
    assert ledger.get(STATE, "account/ops-3").data["status"] == "deactivated"
    head = ledger.head()
    again = provision(client, command_id=command_id)
    assert "already submitted" in again.content.decode() and ledger.head() == head
    assert not User.objects.get(username="ops-3").is_active
    assert len(mailoutbox) == 1  # the first link only


def test_with_two_admins_one_cannot_deactivate_a_finance_user(client_as, users, ledger):
    """Deactivating finance stops payouts; it is a staff change another admin approves (tests/console/
    test_staff_changes.py), as deactivating an admin is."""
    handle = seal("account", STAFF["finance"])
    revision = ledger.get(STATE, f"account/{STAFF['finance']}").revision
    head = ledger.head()
    page = client_as("admin").post(f"/ledger/accounts/{handle}/", {"command_id": new_command_id(), "roles": [],
                                                                   "revision": str(revision)}).content.decode()
    assert "Deactivating an account holding finance is a staff change that another admin approves" in page
    assert ledger.head() == head
    assert ledger.get(STATE, f"actor/{STAFF['finance']}").data == {"roles": ["finance"], "status": "active"}
    users["finance"].refresh_from_db()
    assert users["finance"].is_active


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
