"""The accounting screens in Chromium, at 390 px: the trial balance, a statement from it, an entry's postings
from the statement, the run it wrote and back; the raw units toggle; the conservation check from the dashboard."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.console.browser import chromium, new_page, phone, screenshots, sign_in_as, staff  # noqa: F401  (fixtures)
from tests.console.test_readme_walk import assert_no_sideways_scroll

pytestmark = pytest.mark.browser


def test_an_auditor_walks_from_the_trial_balance_to_an_entrys_postings_on_a_phone(phone, staff, ledger, screenshots):
    page = phone
    sign_in_as(page, staff["auditor"]["username"], staff["auditor"]["password"])
    page.goto("/ledger/accounting/trial-balance/")
    expect(page.locator("#total-USDC")).to_contain_text("balanced")
    assert_no_sideways_scroll(page)
    page.screenshot(path=screenshots / "trial-balance-phone.png", full_page=True)
    page.click("#raw-toggle")
    expect(page.locator("#trial-balance span.money.raw").first).to_be_visible()
    assert "." not in page.locator("#trial-balance span.money.raw").first.inner_text()
    page.click("#trial-balance tbody a:text-is('treasury')")
    expect(page.locator("#statement")).to_be_visible()
    assert_no_sideways_scroll(page)
    page.locator("#statement tbody a").first.click()
    expect(page.locator("#postings")).to_be_visible()
    assert page.locator("#postings tbody tr").count() >= 2
    assert_no_sideways_scroll(page)
    page.locator("#postings").screenshot(path=screenshots / "journal-postings-phone.png")


def test_finance_follows_a_run_to_its_journal_entries_on_a_phone(phone, staff, ledger):
    page = phone
    sign_in_as(page, staff["finance"]["username"], staff["finance"]["password"])
    page.goto("/ledger/payouts/?status=approved")
    page.locator("#runs tbody a").first.click()
    page.click("#journal-history")
    expect(page.locator("#record-history tbody tr").first).to_contain_text("PreparePayoutRun")
    assert_no_sideways_scroll(page)


def test_ops_runs_the_full_conservation_check_from_the_dashboard(phone, staff, ledger):
    page = phone
    sign_in_as(page, staff["ops"]["username"], staff["ops"]["password"])
    head = ledger.head().sequence
    page.click("#conservation-check input[type=submit]")
    expect(page.locator("#invariants")).to_contain_text(f"last full check at sequence {head + 1}")
    assert_no_sideways_scroll(page)
