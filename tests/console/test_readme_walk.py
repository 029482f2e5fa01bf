"""The README's walk in headless Chromium, at a desktop width and at 390 px: sign in, approve the run the demo
left waiting, then prepare another from the unpaid allocations the demo leaves and have it approved.

At every step the page itself must not scroll sideways: wide tables scroll inside their own container.
"""

from __future__ import annotations

import time
from base64 import b32decode

import pytest
from django_otp.oath import TOTP
from playwright.sync_api import Page, expect

from tests.console.browser import (  # noqa: F401  (fixtures)
    browse, chromium, console_users, new_page, screenshots, sign_in_as, staff,
)

pytestmark = pytest.mark.browser

WIDTHS = {"desktop": 1280, "phone": 390}
TOTP_STEP_S = 30


def next_code(secret: str) -> str:
    """The code the authenticator shows in the next 30-second window; a code once used is not accepted again."""
    totp = TOTP(b32decode(secret))
    totp.time = time.time() + TOTP_STEP_S
    return f"{totp.token():06d}"


def current_code(secret: str) -> str:
    return f"{TOTP(b32decode(secret)).token():06d}"


def assert_no_sideways_scroll(page: Page) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"{page.url} is {overflow} px wider than the {page.viewport_size['width']} px window"


def assert_charts_fit_their_cards(page: Page) -> None:
    """Each chart was drawn (Chart.js gave its canvas a size) and lies inside its card."""
    for chart_id in ("chart-money", "chart-holds", "chart-payments"):
        canvas = page.locator(f"#{chart_id}")
        card = page.locator(f"section.chart-card:has(#{chart_id})")
        inner, outer = canvas.bounding_box(), card.bounding_box()
        assert inner["width"] > 100 and inner["height"] > 100, chart_id
        assert outer["x"] <= inner["x"] and inner["x"] + inner["width"] <= outer["x"] + outer["width"], chart_id


@pytest.fixture
def at_width(chromium, live_server):
    contexts = []

    def open_page(width: int) -> Page:
        context = chromium.new_context(base_url=live_server.url, viewport={"width": width, "height": 900})
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


@pytest.mark.parametrize("width", WIDTHS.values(), ids=WIDTHS.keys())
def test_the_readme_walk_approve_the_waiting_run_then_prepare_and_approve_another(
        at_width, staff, ledger, screenshots, width):
    approver = at_width(width)
    sign_in_as(approver, staff["finance2"]["username"], staff["finance2"]["password"])
    assert_no_sideways_scroll(approver)
    approver.click("#review-runs")  # Runs awaiting approval, on the dashboard
    expect(approver.locator("#content h1")).to_have_text("Payout runs")
    assert_no_sideways_scroll(approver)
    approver.locator("#runs tbody a").first.click()
    expect(approver.locator("#run-status")).to_have_text("Prepared")
    # the demo's last day was frozen into day lines, and the waiting run pays one
    expect(approver.locator(".day-line").first).to_contain_text("day line of 03 Oct 2026, chunk 0")
    assert_no_sideways_scroll(approver)
    if width == WIDTHS["phone"]:
        approver.screenshot(path=screenshots / "payout-run-phone.png", full_page=True)
    approver.fill("#id_otp_token", current_code(staff["finance2"]["secret"]))
    approver.click("input[value='Approve run']")
    expect(approver.locator(".messagelist")).to_contain_text("Payout run approved")
    expect(approver.locator("#run-status")).to_have_text("Approved")

    preparer = at_width(width)
    sign_in_as(preparer, staff["finance"]["username"], staff["finance"]["password"])
    preparer.goto("/ledger/payouts/")
    preparer.click("text=Prepare a payout run")
    payables = preparer.locator("#payables tbody tr")
    expect(payables.first).not_to_contain_text("Nothing is payable")
    assert payables.count() >= 2  # the demo leaves two recipients in no run
    assert_no_sideways_scroll(preparer)
    if width == WIDTHS["desktop"]:
        preparer.screenshot(path=screenshots / "payout-prepare.png", full_page=True)
    preparer.click("input[value='Prepare run']")
    expect(preparer.locator(".messagelist")).to_contain_text("Payout run prepared")
    expect(preparer.locator("#run-status")).to_have_text("Prepared")
    prepared_url = preparer.url

    approver.goto(prepared_url)
    if width == WIDTHS["desktop"]:
        approver.screenshot(path=screenshots / "payout-run.png", full_page=True)
    approver.fill("#id_otp_token", next_code(staff["finance2"]["secret"]))
    approver.click("input[value='Approve run']")
    expect(approver.locator(".messagelist")).to_contain_text("Payout run approved")
    expect(approver.locator("#run-status")).to_have_text("Approved")
    assert_no_sideways_scroll(approver)

    approver.goto("/ledger/payouts/payments/")
    expect(approver.locator("#payments tbody tr").first).to_be_visible()
    assert_no_sideways_scroll(approver)
    if width == WIDTHS["desktop"]:
        approver.screenshot(path=screenshots / "payments.png", full_page=True)
    approver.goto("/ledger/")
    expect(approver.locator("#chart-money")).to_be_visible()
    assert_no_sideways_scroll(approver)
    assert_charts_fit_their_cards(approver)
    approver.screenshot(path=screenshots / ("dashboard.png" if width == WIDTHS["desktop"] else "dashboard-phone.png"),
                        full_page=True)
