"""Demo sign-ins are made once: a restart resets nobody, and an account an admin provisioned is never touched."""

from __future__ import annotations

import stat

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django_otp.plugins.otp_totp.models import TOTPDevice

from porto_console.console.services.demo import credentials_path, demo_sign_ins, demo_users
from tests.console.test_accounts import provision

DEMO_STAFF = {"demo-admin", "demo-admin-2", "demo-finance-1", "demo-finance-2", "demo-finance-3", "demo-ops-1", "demo-auditor-1"}


@pytest.fixture(autouse=True)
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    return settings.VAR_DIR


def test_the_first_start_makes_every_demo_sign_in_and_remembers_it_for_the_host_alone(ledger, db):
    issued = {sign_in.username: sign_in for sign_in in demo_users()}
    assert set(issued) == DEMO_STAFF
    assert User.objects.get(username="demo-finance-2").check_password(issued["demo-finance-2"].password)
    assert issued["demo-finance-2"].totp_secret and issued["demo-finance-2"].otpauth_url.startswith("otpauth://")
    assert stat.S_IMODE(credentials_path().stat().st_mode) == 0o600


def test_a_restart_resets_no_password_and_no_authenticator(ledger, db):
    first = {sign_in.username: sign_in for sign_in in demo_users()}
    devices = set(TOTPDevice.objects.values_list("pk", flat=True))
    assert demo_users() == []
    user = User.objects.get(username="demo-finance-1")
    assert user.check_password(first["demo-finance-1"].password)
    assert set(TOTPDevice.objects.values_list("pk", flat=True)) == devices
    shown = {sign_in.username: sign_in for sign_in in demo_sign_ins()}
    assert shown["demo-finance-1"].password == first["demo-finance-1"].password
    assert shown["demo-finance-1"].totp_secret == first["demo-finance-1"].totp_secret


def test_a_password_its_owner_changed_survives_a_restart_and_is_not_shown(ledger, db):
    demo_users()
    user = User.objects.get(username="demo-ops-1")
    user.set_password("the owner's own passphrase")
    user.save()
    assert demo_users() == []
    assert User.objects.get(username="demo-ops-1").check_password("the owner's own passphrase")
    assert {sign_in.username: sign_in.password for sign_in in demo_sign_ins()}["demo-ops-1"] is None


def test_a_provisioned_account_gets_no_demo_sign_in_on_any_start(client_as, ledger, mailoutbox):
    provision(client_as("admin"))  # ops-3, pending its owner's enrolment
    demo_users()
    demo_users()
    user = User.objects.get(username="ops-3")
    assert not user.has_usable_password()
    assert not TOTPDevice.objects.filter(user=user).exists()
    assert "ops-3" not in {sign_in.username for sign_in in demo_sign_ins()}


def test_demo_credentials_prints_what_the_first_start_printed(ledger, db, capsys):
    issued = {sign_in.username: sign_in for sign_in in demo_users()}
    call_command("demo_credentials")
    printed = capsys.readouterr().out
    assert f"password {issued['demo-finance-2'].password}" in printed
    assert f"TOTP secret {issued['demo-finance-2'].totp_secret}" in printed
    assert issued["demo-ops-1"].password in printed and "demo-auditor-1" in printed


def test_the_demo_sign_in_page_says_where_the_demo_sign_ins_are(client, client_as, ledger):
    page = client.get("/login/").content.decode()
    assert 'id="demo-sign-ins"' in page
    assert "manage.py demo_credentials" in page and "manage.py demo_totp_code demo-finance-2" in page
    assert 'id="demo-sign-ins"' not in client_as("finance").get("/ledger/").content.decode()
