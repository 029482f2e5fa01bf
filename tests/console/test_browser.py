"""The console in headless Chromium against a live server: what staff actually click through.

Screenshots of the main screens go to a temporary directory, or to
``PORTO_SCREENSHOTS`` (the README's images are made with
``PORTO_SCREENSHOTS=docs/screenshots``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from porto_console.console.services.users import issue_credentials, sync_user
from tests.console.conftest import ROLE_OF, STAFF, code_for
from tests.money_allocation.world import FINANCE, FINANCE_2
from tests.money_payouts.world import RECIPIENTS

# Playwright's sync API keeps an event loop in this thread; the ORM calls made here are synchronous.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = pytest.mark.browser

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
        user, _ = sync_user(username, roles=[role], active=True)
        issued[name] = {"username": username, "password": issue_credentials(user).password}
    return issued


@pytest.fixture
def new_page(chromium, live_server):
    """``new_page()``: a page in a fresh browser context (its own cookies) on the live server."""
    contexts = []

    def open_page() -> Page:
        context = chromium.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def browse(ledger, transactional_db, new_page):
    """``browse("admin")``: a page signed in as that demo staff user, on the demo ledger."""
    staff = console_users({name: (account, ROLE_OF[name]) for name, account in STAFF.items()})

    def sign_in(name: str) -> Page:
        page = new_page()
        sign_in_as(page, staff[name]["username"], staff[name]["password"])
        return page

    return sign_in


def sign_in_as(page: Page, username: str, password: str) -> None:
    page.goto("/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    expect(page.locator("#content h1")).to_have_text("Dashboard")


def test_admin_provisions_a_staff_account_who_then_signs_in(browse, new_page, ledger, screenshots):
    page = browse("admin")
    expect(page.locator(".demo-banner")).to_contain_text("DEMO DATA")
    page.screenshot(path=screenshots / "dashboard.png", full_page=True)
    page.click("text=Accounts")
    expect(page.locator("#content h1")).to_have_text("Accounts")
    page.screenshot(path=screenshots / "accounts.png", full_page=True)
    page.click("text=Provision an account")
    page.select_option("#id_kind", "staff")
    page.fill("#id_account_id", "ops-2")
    page.fill("#id_identity", "ops2@porto.test")
    page.check("input[name=roles][value=ops]")
    page.click("input[value=Provision]")
    expect(page.locator("#credentials")).to_contain_text("Sign-in details for ops-2")
    page.screenshot(path=screenshots / "account-provisioned.png", full_page=True)
    password = page.inner_text("#new-password")
    assert ledger.get("state", "actor/ops-2").data == {"roles": ["ops"], "status": "active"}

    sign_in_as(new_page(), "ops-2", password)


def test_auditor_verifies_the_chain_and_opens_an_entry(browse, ledger, screenshots):
    page = browse("auditor")
    page.click("text=Journal explorer")
    page.click("input[value=Verify]")
    expect(page.locator("#chain-check")).to_contain_text("Chain verified")
    page.screenshot(path=screenshots / "journal.png", full_page=True)
    page.click(f"a[href='/ledger/journal/{ledger.head().sequence}/']")
    expect(page.locator("#content h1")).to_have_text(re.compile(rf"Journal entry {ledger.head().sequence}"))
    page.screenshot(path=screenshots / "journal-entry.png", full_page=True)


def test_ops_releases_a_hold_after_reading_its_evidence(browse, ledger, screenshots):
    page = browse("ops")
    page.click("#nav-sidebar >> text=Holds")
    expect(page.locator("#holds tbody tr").first).to_be_visible()
    page.screenshot(path=screenshots / "holds.png", full_page=True)
    page.locator("#holds tbody a").first.click()
    expect(page.locator("#hold-status")).to_have_text("open")
    page.check("input[name=decision][value=release]")
    page.select_option("#id_reason", "evidence_verified")
    page.fill("#id_note", "served bytes match the node's inventory")
    page.screenshot(path=screenshots / "hold.png", full_page=True)
    page.click("input[value='Record decision']")
    expect(page.locator(".messagelist")).to_contain_text("Hold released")
    expect(page.locator("#hold-status")).to_have_text("released")


def test_a_run_is_prepared_by_one_finance_user_and_approved_by_another_with_a_code(
        payouts_world, transactional_db, new_page, screenshots):
    finance = console_users({"preparer": (FINANCE, "finance"), "approver": (FINANCE_2, "finance")})
    preparer = new_page()
    sign_in_as(preparer, **finance["preparer"])
    preparer.click("#nav-sidebar >> text=Payout runs")
    preparer.click("text=Prepare a payout run")
    expect(preparer.locator("#payables tbody tr")).to_have_count(len(RECIPIENTS))
    preparer.screenshot(path=screenshots / "payout-prepare.png", full_page=True)
    preparer.click("input[value='Prepare run']")
    expect(preparer.locator(".messagelist")).to_contain_text("Payout run prepared")
    expect(preparer.locator("#approve")).to_contain_text("You prepared this run: another finance user must approve it")
    expect(preparer.locator("#approve form")).to_have_count(0)

    approver = new_page()
    sign_in_as(approver, **finance["approver"])
    approver.click("#nav-sidebar >> text=Payout runs")
    approver.locator("#runs tbody a").first.click()
    expect(approver.locator("#run-status")).to_have_text("prepared")
    approver.screenshot(path=screenshots / "payout-run.png", full_page=True)
    approver.fill("#id_otp_token", code_for(FINANCE_2))
    approver.click("input[value='Approve run']")
    expect(approver.locator(".messagelist")).to_contain_text("Payout run approved")
    expect(approver.locator("#run-status")).to_have_text("approved")
    expect(approver.locator("#payments td.payment-state")).to_have_text(["approved"] * len(RECIPIENTS))
    approver.click("#nav-sidebar >> text=Payments")
    expect(approver.locator("#payments tbody tr")).to_have_count(len(RECIPIENTS))
    approver.screenshot(path=screenshots / "payments.png", full_page=True)
    approver.click("#nav-sidebar >> text=Budgets and balances")
    approver.screenshot(path=screenshots / "budgets.png", full_page=True)


def test_ops_see_why_effects_are_quarantined_and_retry_them_in_bulk(browse, ledger, settings, screenshots):
    from ledger_engine.layout import INDEXES, OUTBOX
    from porto_console.effects.quarantine import Quarantine

    quarantine = Quarantine(settings.QUARANTINE_DIR)
    effect_ids = [key.rsplit("/", 1)[1] for key, _ in ledger.scan(INDEXES, "effect_by_status/", limit=2)]
    for effect_id in effect_ids:
        quarantine.add(effect_id, ledger.get(OUTBOX, effect_id).data["kind"],
                       "Poison: attempt refused: CONFLICTING_EVIDENCE the bytes pay another address", 0,
                       cause="refused rule: the ledger or the chain contradicts the effect's records")
    page = browse("ops")
    page.goto("/ledger/quarantine/")
    expect(page.locator("#quarantine td.cause").first).to_have_text(
        "refused rule: the ledger or the chain contradicts the effect's records")
    page.screenshot(path=screenshots / "quarantine.png", full_page=True)
    page.locator("#quarantine input[name=effect]").first.check()
    page.click("text=Retry selected")
    expect(page.locator(".messagelist")).to_contain_text("1 effect(s) released")
    page.click("text=Retry all 1")
    expect(page.locator("#quarantine")).to_contain_text("Nothing is quarantined.")
    assert quarantine.entries() == []
