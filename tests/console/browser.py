"""Headless Chromium against a live server: the fixtures and steps the browser tests share.

Test modules import the fixtures they use from here (pytest then finds them).
"""

from __future__ import annotations

import os
from base64 import b32decode
from pathlib import Path

import pytest
from django_otp.oath import TOTP
from playwright.sync_api import Page, expect, sync_playwright

from ledger_engine.demo.foundation import staff_email
from porto_console.console.services.users import issue_credentials, sync_user
from tests.console.conftest import ROLE_OF, STAFF

# Playwright's sync API keeps an event loop in this thread; the ORM calls made here are synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def chromium():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def screenshots(tmp_path) -> Path:
    directory = Path(os.environ.get("PORTO_SCREENSHOTS") or tmp_path / "screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def console_users(names: dict[str, tuple[str, str]]) -> dict[str, dict[str, str]]:
    """Users with fresh passwords and authenticators: short name -> username and password."""
    issued = {}
    for name, (username, role) in names.items():
        user, _ = sync_user(username, roles=[role], active=True, email=staff_email(username))
        credentials = issue_credentials(user)
        issued[name] = {"username": username, "password": credentials.password, "secret": credentials.totp_secret}
    return issued


@pytest.fixture
def new_page(chromium, live_server):
    """``new_page()``: a page in a fresh browser context (its own cookies) on the live server.

    Every page collects the Content-Security-Policy violations the browser reports in ``page.csp_violations``.
    """
    contexts = []

    def open_page(width: int = 1280) -> Page:
        context = chromium.new_context(base_url=live_server.url, viewport={"width": width, "height": 900})
        contexts.append(context)
        page = context.new_page()
        page.csp_violations = []
        page.on("console", lambda message: page.csp_violations.append(message.text)
                if "Content Security Policy" in message.text else None)
        return page

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def phone(new_page) -> Page:
    """A page 390 px wide, the narrowest screen the console is laid out for."""
    return new_page(width=390)


@pytest.fixture
def staff(ledger, transactional_db):
    """Every demo staff member with a fresh password and authenticator (the demo's own fixture credentials)."""
    return console_users({name: (account, ROLE_OF[name]) for name, account in STAFF.items()})


@pytest.fixture
def browse(staff, new_page):
    """``browse("admin")``: a page signed in as that demo staff user, on the demo ledger."""

    def sign_in(name: str) -> Page:
        page = new_page()
        sign_in_as(page, staff[name]["username"], staff[name]["password"])
        return page

    return sign_in


def sign_in_as(page: Page, username: str, password: str, *, lands_on: str = "Dashboard") -> None:
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    expect(page.locator("#content h1")).to_have_text(lands_on)


def code_from_secret(secret: str) -> str:
    """What an authenticator app shows for a base32 key, as a person would type it."""
    return f"{TOTP(b32decode(secret)).token():06d}"


def provision_staff(page: Page, account_id: str, email: str, roles: tuple[str, ...] = (), *, fresh: bool = True
                    ) -> None:
    """An admin's page fills in and submits the provisioning form for one staff member: on a new form, or on the
    one already open (``fresh=False``) with whatever was typed into it before."""
    if fresh:
        page.goto("/ledger/accounts/new/")
    page.select_option("#id_kind", "staff")
    page.fill("#id_account_id", account_id)
    page.fill("#id_identity", email)
    for role in roles:
        page.check(f"input[name=roles][value={role}]")
    page.click("input[value=Provision]")
