"""Four attacks on the separation of duties, each as a person (or a worker) would try it; each worked on an early
console.

1. An admin becomes a finance user: reads their authenticator secret, resets their password.
2. An admin provisions two finance accounts and uses both.
3. A worker credential for ApprovePayoutRun approves a run with no authenticator code
   (``test_security.py``: ``test_worker_credentials_are_never_issued_for_a_human_approval`` and
   ``test_a_worker_token_that_allows_approvals_still_cannot_approve``).
4. An admin makes itself superuser, or joins the finance group, from the stock Users screen.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django_otp.plugins.otp_totp.models import TOTPDevice
from playwright.sync_api import Page, expect

from ledger_engine.layout import STATE
from ledger_engine.selectors import staff_queries
from tests.console.browser import (  # noqa: F401  (fixtures)
    browse, chromium, code_from_secret, new_page, provision_staff, screenshots, sign_in_as, staff,
)
from tests.console.conftest import STAFF

pytestmark = pytest.mark.browser


def admin_reachable_pages(page: Page) -> list[str]:
    """Every console page a signed-in admin reaches from the navigation, and the staff accounts' own pages."""
    page.goto("/ledger/accounts/?kind=staff")
    links = {page.locator("#nav-sidebar a").nth(n).get_attribute("href")
             for n in range(page.locator("#nav-sidebar a").count())}
    links |= {page.locator("table.console-table a").nth(n).get_attribute("href")
              for n in range(page.locator("table.console-table a").count())}
    contents = []
    for link in sorted(links):
        page.goto(link)
        contents.append(page.content())
    return contents


def post_with_page_token(page: Page, url: str, form: dict) -> int:
    """A forged form post from the admin's own signed-in browser, carrying a CSRF token from a real form."""
    token = page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute("value")
    return page.request.post(url, form={"csrfmiddlewaretoken": token, **form},
                             headers={"Referer": page.url}).status


def open_pending_change(page) -> None:
    """The account's pending staff change: the demo's own, already decided, are listed too, by change ID."""
    page.click("#account-staff-changes tr:has(span.enum[title='pending']) a")


def test_attack_1_an_admin_sees_no_finance_secret_and_cannot_reset_a_finance_credential_alone(
        browse, new_page, staff, ledger, mailoutbox):
    page = browse("admin")
    for content in admin_reachable_pages(page):
        for name in ("finance", "finance2"):
            assert staff[name]["secret"] not in content and staff[name]["password"] not in content
    for device in TOTPDevice.objects.filter(user__username__in=[STAFF["finance"], STAFF["finance2"]]):
        for suffix in ("config", "qrcode", "change"):
            page.goto(f"/otp_totp/totpdevice/{device.pk}/{suffix}/")
            expect(page.locator("#not-found")).to_contain_text("There is nothing here")
    page.goto(f"/auth/user/{User.objects.get(username=STAFF['finance']).pk}/password/")
    expect(page.locator("#not-found")).to_be_visible()

    # A reset needs a second admin: the requester cannot decide it, even by forging the form.
    page.goto("/ledger/accounts/?kind=staff")
    page.click(f"a:text-is('{STAFF['finance']}')")
    page.select_option("#id_change", "reset_password")
    page.click("input[value='Request change']")
    expect(page.locator(".messagelist")).to_contain_text("another admin must approve it")
    open_pending_change(page)
    expect(page.locator("#decide")).to_contain_text("You requested this change: another admin must decide it")
    head = ledger.head().sequence
    assert post_with_page_token(page, page.url + "approve/", {"command_id": "5d3c2b1a-0f9e-4d8c-b7a6-958473625140",
                                                              "otp_token": "123456"}) == 200
    assert ledger.head().sequence == head  # the admin has no authenticator code: nothing reached the ledger
    finance = User.objects.get(username=STAFF["finance"])
    assert finance.check_password(staff["finance"]["password"]) and mailoutbox == []
    sign_in_as(new_page(), STAFF["finance"], staff["finance"]["password"])  # still only theirs


def test_attack_1_a_forged_approval_with_the_admins_own_code_is_four_eyes_in_the_ledger(browse, staff, ledger):
    """Even with the admin's own fresh code, the ledger refuses the admin deciding its own request."""
    page = browse("admin")
    page.goto("/ledger/accounts/?kind=staff")
    page.click(f"a:text-is('{STAFF['finance2']}')")
    page.select_option("#id_change", "reset_authenticator")
    page.click("input[value='Request change']")
    open_pending_change(page)
    head = ledger.head().sequence
    post_with_page_token(page, page.url + "approve/", {"command_id": "6e4d3c2b-1a0f-4e9d-a8c7-b69584736251",
                                                       "otp_token": code_from_secret(staff["admin"]["secret"])})
    entry = ledger.journal_entry(head + 1)
    assert (entry["envelope"]["command_type"], entry["result"]["code"]) == ("DecideStaffChange", "FOUR_EYES_REQUIRED")
    assert TOTPDevice.objects.filter(user__username=STAFF["finance2"], confirmed=True).exists()


def test_attack_2_an_admin_cannot_provision_two_finance_accounts_and_use_them(browse, ledger, mailoutbox):
    page = browse("admin")
    page.goto("/ledger/accounts/new/")
    expect(page.locator("form.console-form")).to_contain_text("requests a staff change granting it")
    post_with_page_token(page, "/ledger/accounts/new/", {  # finance ticked: provisioned without it, asked of another
        "command_id": "7f5e4d3c-2b1a-4f0e-9d8c-7b6a59483726", "kind": "staff", "account_id": "fin-z",
        "identity": "admin-controlled@porto.test", "roles": "finance"})
    assert ledger.get(STATE, "actor/fin-z").data["roles"] == []
    [requested] = ledger.read(lambda view: staff_queries.changes(view, account_id="fin-z"))
    assert (requested["status"], requested["requested_by"]) == ("pending", STAFF["admin"])

    for name in ("fin-x", "fin-y"):
        provision_staff(page, name, f"{name}@porto.test")
        expect(page.locator("#enrolment-status")).to_contain_text("pending")
        content = page.content()
        assert 'type="password"' not in content and "otpauth://" not in content and "/enrol/" not in content
        expect(page.locator("#change input[name=roles][value=finance]")).to_have_count(0)
        page.select_option("#id_change", "grant_role:finance")
        page.click("input[value='Request change']")
        open_pending_change(page)
        expect(page.locator("#decide")).to_contain_text("another admin must decide it")
    assert [mail.to for mail in mailoutbox] == [  # the owners' own mail
        ["admin-controlled@porto.test"], ["fin-x@porto.test"], ["fin-y@porto.test"]]
    for name in ("fin-x", "fin-y", "fin-z"):
        assert ledger.get(STATE, f"actor/{name}").data["roles"] == []
        assert not User.objects.get(username=name).has_usable_password()


def test_attack_4_an_admin_cannot_make_itself_superuser_or_join_the_finance_group(browse, ledger):
    page = browse("admin")
    admin = User.objects.get(username=STAFF["admin"])
    expect(page.locator("#nav-sidebar")).not_to_contain_text("Users")
    expect(page.locator("#nav-sidebar")).not_to_contain_text("Groups")
    for path in ("/auth/user/", f"/auth/user/{admin.pk}/change/", "/auth/group/", "/auth/group/add/"):
        page.goto(path)
        expect(page.locator("#not-found")).to_be_visible()
    status = post_with_page_token(page, f"/auth/user/{admin.pk}/change/", {
        "username": admin.username, "is_superuser": "on", "is_staff": "on", "groups": "1"})
    assert status == 404
    page.goto("/ledger/accounts/?kind=staff")
    page.click(f"a:text-is('{STAFF['admin']}')")
    expect(page.locator("#content")).to_contain_text("You cannot change your own account")
    page.goto("/ledger/accounts/")
    expect(page.locator("#content")).to_contain_text("superusers exist only through manage.py createsuperuser")
    admin.refresh_from_db()
    assert not admin.is_superuser and list(admin.groups.values_list("name", flat=True)) == ["admin"]
    assert ledger.get(STATE, f"actor/{STAFF['admin']}").data["roles"] == ["admin"]
