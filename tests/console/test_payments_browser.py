"""The Payments search in Chromium, at 390 px: search by recipient, sort by amount, no sideways page scroll."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.console.browser import chromium, new_page, sign_in_as, staff  # noqa: F401  (fixtures)
from tests.console.test_readme_walk import assert_no_sideways_scroll

pytestmark = pytest.mark.browser


def test_finance_finds_a_recipients_payments_and_sorts_them_by_amount_on_a_phone(chromium, live_server, staff,
                                                                                   ledger):
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 390, "height": 900})
    page = context.new_page()
    sign_in_as(page, staff["finance"]["username"], staff["finance"]["password"])
    page.goto("/ledger/payouts/payments/")
    page.select_option("#id_state", "all")
    page.fill("#id_recipient", "artist-0")
    page.click("button:text-is('Filter')")
    rows = page.locator("#payments tbody tr")
    expect(rows.first).to_contain_text("demo-artist-0")
    assert rows.count() > 2 and all("demo-artist-0" in text for text in rows.all_inner_texts())
    assert_no_sideways_scroll(page)
    page.click("#payments a.sort-link:text-is('Amount')")  # largest first
    expect(page.locator("#payments th[aria-sort='descending']")).to_contain_text("Amount")
    page.click("#payments a.sort-link:text-is('Amount')")  # then smallest first
    expect(page.locator("#payments th[aria-sort='ascending']")).to_contain_text("Amount")
    amounts = [int(cell.split()[0].replace(",", "").replace(".", ""))
               for cell in page.locator("#payments td.amount").all_inner_texts()]
    assert amounts == sorted(amounts) and len(amounts) == rows.count()
    assert page.input_value("#id_recipient") == "artist-0"  # the search survives the sort
    assert_no_sideways_scroll(page)
    context.close()
