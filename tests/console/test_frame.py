"""The frame: sign-in, the DEMO DATA label, the head each screen read at, CSRF, sessions, opaque URLs."""

from __future__ import annotations

from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from porto_console.console.handles import seal, unseal
from porto_console.console.services.users import issue_credentials
from tests.console.conftest import STAFF

SCREENS = ["/ledger/", "/ledger/holds/", "/ledger/payouts/", "/ledger/payouts/payments/", "/ledger/recipients/",
           "/ledger/budgets/", "/ledger/budgets/payables/", "/ledger/accounts/", "/ledger/journal/",
           "/ledger/journal/1/"]


def test_every_screen_needs_a_signed_in_user(ledger, db):
    for url in SCREENS:
        response = Client().get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_console_user_lands_on_the_dashboard_with_the_ledger_screens_only(client_as):
    response = client_as("admin").get("/", follow=True)
    assert response.redirect_chain == [("/ledger/", 302)]
    page = response.content.decode()
    for link in ("/ledger/accounts/", "/ledger/staff-changes/", "/ledger/lockouts/", "/ledger/journal/"):
        assert f'href="{link}"' in page
    assert "/auth/" not in page and "/otp_totp/" not in page and "/axes/" not in page


def test_every_page_of_a_demo_ledger_says_demo_data(client_as, ledger):
    client = client_as("auditor")  # the auditor reads every screen
    for url in [*SCREENS, "/password_change/"]:
        assert "DEMO DATA" in client.get(url).content.decode(), url
    assert "DEMO DATA" in Client().get("/login/").content.decode()


def test_a_ledger_with_another_label_is_not_called_demo(client_as, ledger, monkeypatch):
    monkeypatch.setattr(type(ledger), "genesis", lambda self: {"label": "porto london ledger"})
    assert "DEMO DATA" not in client_as("auditor").get("/ledger/").content.decode()


def test_every_screen_states_the_head_it_read_at(client_as, ledger):
    client = client_as("auditor")
    head = ledger.head()
    for url in SCREENS:
        page = client.get(url).content.decode()
        assert f'<strong class="read-sequence">{head.sequence}</strong>' in page, url
        assert head.entry_hash in page, url


def test_posts_without_a_csrf_token_are_refused(users, ledger):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["admin"])
    head = ledger.head()
    response = client.post("/ledger/accounts/new/", {"kind": "staff", "account_id": "x", "identity": "x@porto.test"})
    assert response.status_code == 403
    assert ledger.head() == head


def test_session_and_cookie_settings_are_strict():
    assert settings.SESSION_COOKIE_HTTPONLY and settings.CSRF_COOKIE_HTTPONLY
    assert settings.SESSION_COOKIE_SAMESITE == settings.CSRF_COOKIE_SAMESITE == "Strict"
    assert settings.SESSION_SAVE_EVERY_REQUEST and settings.SESSION_COOKIE_AGE <= 3600
    assert settings.X_FRAME_OPTIONS == "DENY"


def test_account_links_carry_sealed_handles_not_account_ids(client_as):
    page = client_as("admin").get("/ledger/accounts/").content.decode()
    handle = seal("account", STAFF["finance"])
    assert f'href="/ledger/accounts/{handle}/"' in page
    assert f"/ledger/accounts/{STAFF['finance']}" not in page
    assert unseal("account", handle) == STAFF["finance"]


@pytest.mark.parametrize("handle", ["not-a-handle", seal("run", "demo-finance-1"), seal("account", "x")[:-2]])
def test_forged_or_foreign_handles_are_not_found(client_as, handle):
    assert client_as("admin").get(f"/ledger/accounts/{handle}/").status_code == 404


def test_repeated_failed_sign_ins_lock_the_account_out(users, ledger):
    client = Client()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post("/login/", {"username": STAFF["finance"], "password": "wrong-password"})
    users["finance"].set_password("the-right-password")
    users["finance"].save()
    response = client.post("/login/", {"username": STAFF["finance"], "password": "the-right-password"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_the_demo_code_helper_prints_the_code_the_server_accepts(users):
    issue_credentials(users["finance"])
    out = StringIO()
    call_command("demo_totp_code", STAFF["finance"], stdout=out)
    assert TOTPDevice.objects.get(user=users["finance"]).verify_token(out.getvalue().strip())
