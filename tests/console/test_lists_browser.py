"""The lists in Chromium, at 390 px and checked by axe-core: holds and runs searched and sorted, raw minor units
on a run, the trial balance at an older sequence with its replay check, a budget to its journal entries."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser import chromium, new_page, phone, sign_in_as, staff  # noqa: F401  (fixtures)
from tests.console.test_accessibility import serious_violations
from tests.console.test_readme_walk import assert_no_sideways_scroll

pytestmark = pytest.mark.browser


def fits_and_passes_axe(page: Page) -> None:
    assert_no_sideways_scroll(page)
    assert serious_violations(page) == []


def test_ops_finds_a_listeners_holds_and_sorts_them_by_day_on_a_phone(phone, staff, ledger):
    listener = ledger.scan("indexes", "hold_open/", limit=1)[0][1]["listener_id"]
    page = phone
    sign_in_as(page, staff["ops"]["username"], staff["ops"]["password"])
    page.goto("/ledger/holds/")
    page.fill("#id_listener", listener)
    page.click("button:text-is('Filter')")
    rows = page.locator("#holds tbody tr")
    expect(rows.first).to_contain_text(listener)
    assert all(listener in text for text in rows.all_inner_texts())
    fits_and_passes_axe(page)
    page.click("#holds a.sort-link:text-is('Day')")
    expect(page.locator("#holds th[aria-sort='descending']")).to_contain_text("Day")
    days = [element.get_attribute("datetime") for element in page.locator("#holds tbody time").all()]
    assert days == sorted(days, reverse=True)
    assert page.input_value("#id_listener") == listener  # the search survives the sort
    fits_and_passes_axe(page)


def test_ops_sorts_holds_by_the_money_at_stake_and_opens_the_largest_on_a_phone(phone, staff, ledger):
    page = phone
    sign_in_as(page, staff["ops"]["username"], staff["ops"]["password"])
    page.goto("/ledger/holds/")
    page.click("#holds a.sort-link:text-is('At stake')")  # largest first
    expect(page.locator("#holds th[aria-sort='descending']")).to_contain_text("At stake")
    page.click("#raw-toggle")
    stakes = [int(text) if text.isdigit() else 0 for text in page.locator("#holds td.amount").all_inner_texts()]
    assert len(stakes) > 1 and stakes[0] > 0 and stakes == sorted(stakes, reverse=True)
    fits_and_passes_axe(page)
    page.locator("#holds tbody a").first.click()
    expect(page.locator("#hold-stake")).to_contain_text(str(stakes[0]))
    fits_and_passes_axe(page)


def test_finance_sorts_runs_by_total_and_reads_one_in_raw_minor_units_on_a_phone(phone, staff, ledger):
    page = phone
    sign_in_as(page, staff["finance"]["username"], staff["finance"]["password"])
    page.goto("/ledger/payouts/")
    page.select_option("#id_status", "all")
    page.click("button:text-is('Filter')")
    page.click("#runs a.sort-link:text-is('Total')")  # largest first
    expect(page.locator("#runs th[aria-sort='descending']")).to_contain_text("Total")
    totals = [int(re.sub(r"\D", "", text)) for text in page.locator("#runs td.amount").all_inner_texts()]
    assert len(totals) > 1 and totals == sorted(totals, reverse=True)
    fits_and_passes_axe(page)
    page.click("#raw-toggle")
    raw = page.locator("#runs td.amount").first.inner_text()
    assert raw.isdigit() and int(raw) == totals[0]
    page.locator("#runs tbody a").first.click()
    expect(page.locator("span.money.raw").first).to_be_visible()  # the toggle carries into the run
    fits_and_passes_axe(page)


def test_an_auditor_checks_an_older_trial_balance_against_the_journal_on_a_phone(phone, staff, ledger):
    sequence = ledger.head().sequence // 2
    page = phone
    sign_in_as(page, staff["auditor"]["username"], staff["auditor"]["password"])
    page.goto("/ledger/accounting/trial-balance/")
    page.fill("#id_sequence", str(sequence))
    page.check("#id_replay")
    page.click("input[value=Show]")
    expect(page.locator("#trial-sequence")).to_have_text(str(sequence))
    expect(page.locator("#trial-replay")).to_contain_text("gives the same debits and credits for every account")
    fits_and_passes_axe(page)
    page.click("#trial-earlier")
    expect(page.locator("#trial-sequence")).to_have_text(str(sequence - 1))
    expect(page.locator("#trial-replay")).to_contain_text(f"from entry 1 to {sequence - 1}")


def test_finance_follows_a_budget_to_the_journal_entries_that_wrote_it_on_a_phone(phone, staff, ledger):
    budget_id = ledger.scan("state", "budget/", limit=1)[0][1]["data"]["budget_id"]
    page = phone
    sign_in_as(page, staff["finance"]["username"], staff["finance"]["password"])
    page.goto("/ledger/budgets/")
    page.fill("#id_budget", budget_id)
    page.click("button:text-is('Filter')")
    expect(page.locator("#budgets tbody tr")).to_have_count(1)
    fits_and_passes_axe(page)
    page.click(f"#budgets a[aria-label='Journal entries that wrote budget {budget_id}']")
    expect(page.locator("#record-history tbody tr").first).to_contain_text("ImportFunding")
    fits_and_passes_axe(page)


def test_the_reason_list_offers_only_the_reasons_of_the_chosen_decision_and_a_rejection_is_asked_about(
        phone, staff, ledger):
    page = phone
    sign_in_as(page, staff["ops"]["username"], staff["ops"]["password"])
    page.goto("/ledger/holds/")
    page.locator("#holds tbody a").first.click()
    reasons = page.locator("#id_reason")
    page.check("input[name=decision][value=reject]")
    expect(reasons.locator("optgroup[label^='Release']")).to_be_disabled()
    expect(reasons.locator("optgroup[label^='Reject']")).to_be_enabled()
    assert reasons.evaluate("select => select.selectedOptions[0].parentElement.label").startswith("Reject")
    page.check("input[name=decision][value=release]")
    expect(reasons.locator("optgroup[label^='Reject']")).to_be_disabled()
    assert reasons.evaluate("select => select.selectedOptions[0].parentElement.label").startswith("Release")
    fits_and_passes_axe(page)
    page.check("input[name=decision][value=reject]")
    page.click("input[value='Record decision']")
    expect(page.locator("#reject-confirm")).to_contain_text("A rejection is final")
    fits_and_passes_axe(page)
    page.click("text=No, go back")
    expect(page.locator("#hold-status")).to_contain_text("Open")
