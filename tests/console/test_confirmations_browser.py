"""Confirmation steps in Chromium at 390 px, each page checked by axe-core: cancelling a run with a reason and a
note; deciding holds in bulk after ticking them all at once."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.console.browser import chromium, new_page, phone, sign_in_as, staff  # noqa: F401  (fixtures)
from tests.console.test_accessibility import serious_violations
from tests.console.test_readme_walk import assert_no_sideways_scroll

pytestmark = pytest.mark.browser


def test_finance_cancels_the_waiting_run_with_a_note_after_seeing_what_it_ends(phone, staff, ledger):
    page = phone
    sign_in_as(page, staff["finance"]["username"], staff["finance"]["password"])
    page.goto("/ledger/payouts/")
    page.locator("#runs tbody a").first.click()
    page.select_option("#id_reason", "amounts_disputed")
    page.fill("#id_note", "recipient disputes the second day")
    head = ledger.head().sequence
    page.click("input[value='Cancel run…']")
    expect(page.locator("#cancel-confirm")).to_contain_text("recipient disputes the second day")
    assert page.locator("#cancelled-payments tbody tr").count() >= 1 and ledger.head().sequence == head
    assert_no_sideways_scroll(page)
    assert serious_violations(page) == []
    page.click("#confirm-cancel")
    expect(page.locator(".messagelist")).to_contain_text("Payout run cancelled")
    expect(page.locator("#run-status")).to_have_text("Cancelled")
    expect(page.locator("#cancel-note")).to_have_text("recipient disputes the second day")


def test_ops_ticks_every_hold_of_a_reason_and_confirms_the_bulk_decision(phone, staff, ledger):
    page = phone
    sign_in_as(page, staff["ops"]["username"], staff["ops"]["password"])
    page.goto("/ledger/holds/")
    page.locator("#hold-counts a").first.click()
    boxes = page.locator("#holds tbody input[name=holds]")
    listed = boxes.count()
    assert listed >= 1
    page.check("#select-all")
    assert all(boxes.nth(index).is_checked() for index in range(listed))
    page.locator("#bulk input[value=release]").check()
    page.select_option("#bulk select[name=reason]", "evidence_verified")
    head = ledger.head().sequence
    page.click("input[value='Review the ticked holds…']")
    expect(page.locator("#bulk-plan tbody tr")).to_have_count(listed)
    assert ledger.head().sequence == head
    assert_no_sideways_scroll(page)
    assert serious_violations(page) == []
    page.click("#confirm-bulk")
    expect(page.locator(".messagelist")).to_contain_text(f"{listed} of {listed} holds released")
