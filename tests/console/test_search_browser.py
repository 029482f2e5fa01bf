"""The header's search in Chromium: finance pastes a run ID and lands on the run, with no serious or critical
axe-core violation on any page on the way; part of an ID lists the records it is part of."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ledger_engine.layout import STATE
from tests.console.browser import chromium, new_page, sign_in_as, staff  # noqa: F401  (fixtures)
from tests.console.test_accessibility import serious_violations

pytestmark = pytest.mark.browser


def test_finance_pastes_a_run_id_in_the_header_and_lands_on_the_run(new_page, staff, ledger):
    run_id = ledger.scan(STATE, "payment_run/", limit=1)[0][0].split("/", 1)[1]
    page = new_page()
    sign_in_as(page, staff["finance"]["username"], staff["finance"]["password"])
    problems = serious_violations(page)

    page.fill("#header-search-term", "demo-artist-0")
    page.press("#header-search-term", "Enter")
    expect(page.locator("#search-answer-heading")).to_contain_text("records hold what you typed")
    expect(page.locator("#search-results tbody tr").first).to_contain_text("Recipient")
    expect(page.locator("#search-term")).to_have_value("demo-artist-0")
    problems += serious_violations(page)

    page.fill("#header-search-term", run_id)
    page.click("#header-search button[type=submit]")
    expect(page.locator("#content h1")).to_have_text(f"Payout run {run_id}")
    assert run_id not in page.url and "/ledger/payouts/" in page.url
    problems += serious_violations(page)
    assert problems == [], "\n".join(problems)
