"""The console in headless Chromium against a live server: what staff actually click through.

Screenshots of the main screens go to a temporary directory, or to
``PORTO_SCREENSHOTS`` (the README's images are made with
``PORTO_SCREENSHOTS=docs/screenshots``).
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from ledger_engine.layout import STATE
from tests.console.browser import (  # noqa: F401  (fixtures)
    browse, chromium, code_from_secret, console_users, new_page, provision_staff, screenshots, sign_in_as, staff,
)
from tests.console.conftest import code_for, enrolment_link
from tests.money_allocation.world import FINANCE, FINANCE_2
from tests.money_payouts.world import RECIPIENTS

pytestmark = pytest.mark.browser


def test_admin_provisions_a_staff_member_who_enrols_through_their_own_link(browse, new_page, ledger, screenshots,
                                                                           mailoutbox):
    page = browse("admin")
    expect(page.locator(".demo-banner")).to_contain_text("DEMO DATA")
    page.screenshot(path=screenshots / "dashboard.png", full_page=True)
    page.click("text=Accounts")
    expect(page.locator("#content h1")).to_have_text("Accounts")
    page.screenshot(path=screenshots / "accounts.png", full_page=True)
    expect(page.locator("a:text-is('Provision an account')")).to_be_visible()
    provision_staff(page, "ops-2", "ops2@porto.test", roles=("ops",))
    expect(page.locator("#enrolment-status")).to_contain_text("pending: link sent to o***@porto.test")
    expect(page.locator(".messagelist")).to_contain_text("An enrolment link went to ops-2's work email")
    page.screenshot(path=screenshots / "account-provisioned.png", full_page=True)
    assert ledger.get(STATE, "actor/ops-2").data == {"roles": ["ops"], "status": "active"}

    owner = new_page()  # the new staff member, reading their own mail
    owner.goto(enrolment_link(mailoutbox, "ops-2"))
    expect(owner.locator("#qr svg")).to_be_visible()
    owner.screenshot(path=screenshots / "enrolment.png", full_page=True)
    secret = owner.inner_text("#totp-secret")
    owner.fill("#id_password1", "ops two's own passphrase")
    owner.fill("#id_password2", "ops two's own passphrase")
    owner.fill("#id_otp_token", code_from_secret(secret))
    owner.click("input[value='Set up my sign-in']")
    expect(owner.locator("#content h1")).to_have_text("Dashboard")
    assert owner.csp_violations == []
    assert ledger.get(STATE, "staff_credentials/ops-2").data["status"] == "enrolled"
    page.reload()
    expect(page.locator("#enrolment-status")).to_have_text("enrolled")
    sign_in_as(new_page(), "ops-2", "ops two's own passphrase")


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
    expect(page.locator("#hold-status")).to_have_text("Open")
    page.check("input[name=decision][value=release]")
    page.select_option("#id_reason", "evidence_verified")
    page.fill("#id_note", "served bytes match the node's inventory")
    page.screenshot(path=screenshots / "hold.png", full_page=True)
    page.click("input[value='Record decision']")
    expect(page.locator(".messagelist")).to_contain_text("Hold released")
    expect(page.locator("#hold-status")).to_have_text("Released")


def test_a_run_is_prepared_by_one_finance_user_and_approved_by_another_with_a_code(
        payouts_world, transactional_db, new_page, screenshots):
    """The approval carries a step-up proof the ledger checks (the payout world trusts the test step-up key)."""
    finance = console_users({"preparer": (FINANCE, "finance"), "approver": (FINANCE_2, "finance")})
    preparer = new_page()
    sign_in_as(preparer, finance["preparer"]["username"], finance["preparer"]["password"])
    preparer.click("#nav-sidebar >> text=Payout runs")
    preparer.click("text=Prepare a payout run")
    expect(preparer.locator("#payables tbody tr")).to_have_count(len(RECIPIENTS))
    preparer.screenshot(path=screenshots / "payout-prepare.png", full_page=True)
    preparer.click("input[value='Prepare run']")
    expect(preparer.locator(".messagelist")).to_contain_text("Payout run prepared")
    expect(preparer.locator("#approve")).to_contain_text("You prepared this run: another finance user must approve it")
    expect(preparer.locator("#approve form")).to_have_count(0)

    approver = new_page()
    sign_in_as(approver, finance["approver"]["username"], finance["approver"]["password"])
    approver.click("#nav-sidebar >> text=Payout runs")
    approver.locator("#runs tbody a").first.click()
    expect(approver.locator("#run-status")).to_have_text("Prepared")
    approver.screenshot(path=screenshots / "payout-run.png", full_page=True)
    approver.fill("#id_otp_token", code_for(FINANCE_2))
    approver.click("input[value='Approve run']")
    expect(approver.locator(".messagelist")).to_contain_text("Payout run approved")
    expect(approver.locator("#run-status")).to_have_text("Approved")
    expect(approver.locator("#payments td.payment-state")).to_have_text(["Approved"] * len(RECIPIENTS))
    approval = payouts_world.owner.journal_entry(payouts_world.owner.head().sequence)["envelope"]
    assert approval["command_type"] == "ApprovePayoutRun" and "step_up" in approval["payload"]
    approver.click("#nav-sidebar >> text=Payments")
    expect(approver.locator("#payments tbody tr")).to_have_count(len(RECIPIENTS))
    approver.screenshot(path=screenshots / "payments.png", full_page=True)
    approver.click("#nav-sidebar >> text=Budgets and balances")
    approver.screenshot(path=screenshots / "budgets.png", full_page=True)


def test_pages_and_the_api_docs_render_within_the_content_security_policy(browse):
    """The browser itself reports any script, style or image the policy blocks; none may be."""
    page = browse("auditor")
    for path in ("/ledger/", "/ledger/holds/", "/ledger/payouts/", "/ledger/accounts/", "/ledger/staff-changes/",
                 "/ledger/journal/", "/ledger/budgets/", "/ledger/holds/no-such-handle/"):
        page.goto(path)
    page.goto("/internal/docs")
    expect(page.locator("#swagger-ui .info .title")).to_contain_text("Porto internal worker API")
    assert page.csp_violations == []
    admin = browse("admin")
    admin.goto("/ledger/lockouts/")
    admin.goto("/ledger/accounts/new/")
    assert admin.csp_violations == []

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
