"""Provisioning in headless Chromium: the form's fields follow the account kind, an artist is provisioned under
its display name and listed by it, and ticking finance for a staff member files the staff change another admin
approves. Each screen visited has no serious or critical axe-core violation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ledger_engine.layout import STATE
from ledger_engine.selectors import staff_queries
from tests.console.browser import browse, chromium, new_page, provision_staff, staff  # noqa: F401  (fixtures)
from tests.console.conftest import STAFF
from tests.console.test_accessibility import serious_violations

pytestmark = pytest.mark.browser

ARTIST_ADDRESS = "0x" + "ab" * 32


def form_row(page, name: str):
    return page.locator(f".form-row:has([name={name}])")


def test_the_fields_follow_the_kind_and_an_artist_is_listed_by_its_display_name(browse, ledger):
    page = browse("admin")
    page.goto("/ledger/accounts/new/")
    page.select_option("select[name=kind]", "staff")
    expect(form_row(page, "display_name")).to_be_hidden()
    expect(form_row(page, "payout_address")).to_be_hidden()
    expect(form_row(page, "roles")).to_be_visible()
    page.select_option("select[name=kind]", "artist")
    expect(form_row(page, "roles")).to_be_hidden()
    expect(form_row(page, "display_name")).to_be_visible()
    assert serious_violations(page) == []
    page.fill("input[name=identity]", "provider|artist-ines")
    page.fill("input[name=display_name]", "  Inês Lua Nova  ")
    page.fill("input[name=payout_address]", ARTIST_ADDRESS)
    account_id = page.input_value("input[name=account_id]")
    page.click("input[value=Provision]")
    expect(page.locator(".messagelist")).to_contain_text(f"Account {account_id} provisioned")
    expect(page.locator("#account-display-name")).to_have_text("Inês Lua Nova")
    assert ledger.get(STATE, f"account/{account_id}").data["display_name"] == "Inês Lua Nova"
    page.goto("/ledger/accounts/?account=lua nova")
    expect(page.locator("#accounts tbody tr")).to_have_count(1)
    expect(page.locator("#accounts .display-name")).to_have_text("Inês Lua Nova")
    assert serious_violations(page) == []


def test_a_name_typed_for_staff_is_not_sent_once_the_kind_hides_it(browse, ledger):
    page = browse("admin")
    page.goto("/ledger/accounts/new/")
    page.select_option("select[name=kind]", "artist")
    page.fill("input[name=display_name]", "Left Behind")
    provision_staff(page, "ops-7", "ops7@porto.test", roles=("ops",), fresh=False)
    expect(page.locator(".messagelist")).to_contain_text("Account ops-7 provisioned")
    assert "display_name" not in ledger.get(STATE, "account/ops-7").data


def test_ticking_finance_provisions_without_it_and_asks_another_admin(browse, ledger):
    page = browse("admin")
    provision_staff(page, "fin-9", "fin9@porto.test", roles=("finance",))
    expect(page.locator(".messagelist")).to_contain_text("Granting finance to fin-9 is requested: another admin (")
    assert ledger.get(STATE, "actor/fin-9").data["roles"] == []
    [change] = ledger.read(lambda view: staff_queries.changes(view, account_id="fin-9"))
    assert (change["change"]["role"], change["status"], change["requested_by"]) == ("finance", "pending",
                                                                                   STAFF["admin"])
    expect(page.locator("#account-staff-changes")).to_contain_text("finance")
    assert serious_violations(page) == []
