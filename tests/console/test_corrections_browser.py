"""Requesting a correction in Chromium on a phone, checked by axe-core: a listener-day chosen from lists, its
lines ticked, replacement rows filled by the split helper, reviewed in USDC, then submitted."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.console.browser import chromium, new_page, phone, sign_in_as, staff  # noqa: F401  (fixtures)
from tests.console.test_lists_browser import fits_and_passes_axe

pytestmark = pytest.mark.browser


def lines_of_one_work(ledger) -> list[dict]:
    """The payable artist lines of one work on one listener-day of the demo ledger."""
    lines = [value["data"] for _, value in ledger.scan("state", "allocation_line/", limit=100_000)
             if value["data"]["status"] == "payable" and value["data"]["role"] == "artist"
             and value["data"]["budget_id"] and not value["data"].get("pending_correction")]
    first = lines[0]
    return [line for line in lines if (line["budget_id"], line["listener_id"], line["day"], line["work_id"])
            == (first["budget_id"], first["listener_id"], first["day"], first["work_id"])]


def test_finance_corrects_a_listener_days_work_by_picking_lines_and_splitting_in_usdc_on_a_phone(phone, staff,
                                                                                                  ledger):
    lines = lines_of_one_work(ledger)
    first, total = lines[0], sum(int(line["amount"]) for line in lines)
    page = phone
    sign_in_as(page, staff["finance"]["username"], staff["finance"]["password"])
    page.goto("/ledger/corrections/request/")
    page.select_option("#id_budget", first["budget_id"])
    page.click("#choose button:text-is('Show')")
    page.select_option("#id_listener_day", f"{first['day']} {first['listener_id']}")
    page.click("#choose button:text-is('Show')")
    for line in lines:
        page.check(f"#reverse-{line['line_id']}")
    fits_and_passes_axe(page)
    whole, fraction = divmod(total, 1_000_000)
    page.select_option("#id_split_work", first["work_id"])
    page.fill("#id_split_total", f"{whole}.{fraction:06d}")
    page.click("#split")
    expect(page.locator("#id_rows-0-amount")).not_to_have_value("")
    for line in lines:
        expect(page.locator(f"#reverse-{line['line_id']}")).to_be_checked()
    page.select_option("#id_remainder_to", "refund") if page.locator("select#id_remainder_to").count() else \
        page.check("input[name=remainder_to][value=refund]")
    page.click("#review")
    expect(page.locator("#review-replaced")).to_contain_text(f"{whole:,}.{fraction:06d} USDC")
    expect(page.locator("#review-remainder")).to_contain_text("0.000000 USDC goes out as a refund")
    fits_and_passes_axe(page)
    page.click("#submit")
    expect(page.locator("#correction-status")).to_contain_text("Requested")
    assert all(ledger.get("state", f"allocation_line/{line['line_id']}").data["pending_correction"]
               for line in lines)
