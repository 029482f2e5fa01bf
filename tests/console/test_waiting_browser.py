"""The dashboard's "waiting for you" queue in Chromium at 390 px: the approver sees the run someone else prepared."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.console.browser import chromium, new_page, sign_in_as, staff  # noqa: F401  (fixtures)
from tests.console.test_readme_walk import assert_no_sideways_scroll

pytestmark = pytest.mark.browser


def test_the_approver_opens_the_run_waiting_for_them_on_a_phone(chromium, live_server, staff, ledger):
    context = chromium.new_context(base_url=live_server.url, viewport={"width": 390, "height": 900})
    page = context.new_page()
    sign_in_as(page, staff["finance2"]["username"], staff["finance2"]["password"])
    card = page.locator("#waiting-runs")
    expect(card.locator(".figure")).not_to_have_text("0")
    assert_no_sideways_scroll(page)
    card.locator("a").click()
    expect(page.locator("#runs tbody tr").first).to_contain_text("Prepared")
    context.close()
