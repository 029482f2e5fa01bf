"""Every main screen, checked in Chromium by axe-core (vendored from its npm package in tests/support/axe/):
no serious or critical violation, for each role's screens, the sign-in page and the statement verifier."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page

from tests.console.browser import browse, chromium, new_page, staff  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser

AXE = (Path(__file__).resolve().parents[1] / "support" / "axe" / "axe.min.js").read_text()
BLOCKING = ("serious", "critical")
# Screens by role; "first:" opens the first record linked from a list.
SCREENS = {
    "finance": ["/ledger/", "/ledger/payouts/", "first:/ledger/payouts/?status=approved#runs",
                "/ledger/payouts/prepare/", "/ledger/payouts/payments/", "/ledger/recipients/",
                "/ledger/recipients/request/", "/ledger/corrections/", "first:/ledger/corrections/#content table",
                "/ledger/corrections/request/", "/ledger/budgets/", "/ledger/budgets/payables/",
                "/ledger/accounting/trial-balance/", "/ledger/accounting/trial-balance/?raw=1",
                "first:/ledger/accounting/trial-balance/#trial-balance", "/ledger/accounting/statement/",
                "first:/ledger/payouts/payments/#payments", "/ledger/payouts/?status=all&run=run&sort=total&dir=asc",
                "/ledger/budgets/?budget=budget&sort=funding&dir=desc&raw=1", "/ledger/budgets/payables/?recipient=artist",
                "/ledger/accounting/trial-balance/?sequence=5&replay=on&raw=0",
                "/ledger/recipients/?status=approved&sort=recipient", "first:/ledger/recipients/?status=approved#updates"],
    "ops": ["/ledger/", "/ledger/holds/", "first:/ledger/holds/#holds", "/ledger/quarantine/",
            "/ledger/holds/?listener=listener&sort=day&dir=desc", "/ledger/quarantine/?kind=pay&sort=retries&dir=asc"],
    "admin": ["/ledger/accounts/", "/ledger/accounts/new/", "first:/ledger/accounts/#content table",
              "/ledger/staff-changes/", "/ledger/lockouts/", "/ledger/journal/", "/ledger/accounts/?account=demo&sort=updated",
              "/ledger/staff-changes/?status=approved&account=demo&sort=status",
              "/ledger/lockouts/?username=demo&sort=failures"],
    "auditor": ["/ledger/journal/", "/ledger/journal/1/", "/ledger/journal/?admitted_from=2020-01-01&sort=sequence&dir=asc",
                "first:/ledger/accounting/statement/?account=treasury&asset=USDC#statement"],
}


def serious_violations(page: Page) -> list[str]:
    page.evaluate(AXE)
    found = page.evaluate("""async () => {
        const result = await axe.run(document, {resultTypes: ["violations"]});
        return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                             targets: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
    }""")
    return [f"{page.url}: {v['impact']} {v['id']} ({v['help']}) at {v['targets']}" for v in found
            if v["impact"] in BLOCKING]


def open_screen(page: Page, screen: str) -> None:
    if not screen.startswith("first:"):
        page.goto(screen)
        return
    path, _, container = screen[len("first:"):].partition("#")
    page.goto(path)
    page.locator(f"#{container} tbody a").first.click()
    page.wait_for_load_state()


@pytest.mark.parametrize("role", SCREENS)
def test_no_serious_or_critical_violation_on_the_screens_of(role, browse, ledger):
    page = browse(role)
    problems = []
    for screen in SCREENS[role]:
        open_screen(page, screen)
        problems += serious_violations(page)
    assert problems == [], "\n".join(problems)


def test_no_serious_or_critical_violation_on_the_sign_in_and_verify_pages(new_page, db):
    page = new_page()
    problems = []
    for path in ("/login/", "/verify/"):
        page.goto(path)
        problems += serious_violations(page)
    assert problems == [], "\n".join(problems)
