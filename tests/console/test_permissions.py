"""Every screen and action by every role, forged posts included; the ledger checks roles itself too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from ledger_engine.layout import INDEXES
from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.roles import CONSOLE_ROLES, command_roles
from porto_console.console.services.users import sync_user
from tests.console.conftest import STAFF

EVERYONE = frozenset(CONSOLE_ROLES)
FINANCE_AUDITOR = frozenset({"finance", "auditor"})
ACCOUNT = seal("account", "demo-artist-01")
RUN = seal("run", "run-00000000-0000-4000-8000-000000000000")
UPDATE = seal("recipient-update", "demo-artist-01/update-00000000-0000-4000-8000-000000000000")
NO_HASH = "0" * 64


@pytest.fixture
def hold(ledger) -> str:
    """The oldest open hold of the demo scenario, sealed for its URL."""
    return seal("hold", ledger.scan(INDEXES, "hold_open/", limit=1)[0][0].rsplit("/", 1)[1])


SCREENS: dict[str, frozenset[str]] = {
    "/ledger/": EVERYONE,
    "/ledger/holds/": frozenset({"ops", "auditor"}),
    "/ledger/holds/{hold}/": frozenset({"ops", "auditor"}),
    "/ledger/payouts/": FINANCE_AUDITOR,
    "/ledger/payouts/prepare/": frozenset({"finance"}),
    "/ledger/payouts/payments/": FINANCE_AUDITOR,
    "/ledger/recipients/": FINANCE_AUDITOR,
    "/ledger/recipients/request/": frozenset({"finance"}),
    "/ledger/budgets/": FINANCE_AUDITOR,
    "/ledger/budgets/payables/": FINANCE_AUDITOR,
    "/ledger/accounts/": frozenset({"admin", "auditor"}),
    f"/ledger/accounts/{ACCOUNT}/": frozenset({"admin", "auditor"}),
    "/ledger/accounts/new/": frozenset({"admin"}),
    "/ledger/journal/": frozenset({"admin", "auditor"}),
    "/ledger/journal/1/": frozenset({"admin", "auditor"}),
    "/ledger/quarantine/": frozenset({"ops", "auditor"}),
}


@dataclass(frozen=True)
class Action:
    """A form post that becomes one ledger command."""

    name: str
    url: str
    command_type: str
    data: Callable[[], dict[str, str | list[str]]]


ACTIONS = [
    Action("decide hold", "/ledger/holds/{hold}/", "DecideHold", lambda: {
        "command_id": new_command_id(), "decision": "release", "reason": "evidence_verified", "revision": "1"}),
    Action("bulk decide holds", "/ledger/holds/bulk/", "DecideHold", lambda: {
        "command_id": new_command_id(), "hold_reason": "late", "holds": ["demo-hold"], "decision": "reject",
        "reason": "policy_violation"}),
    Action("prepare run", "/ledger/payouts/prepare/", "PreparePayoutRun", lambda: {
        "command_id": new_command_id(), "recipients": ["demo-artist-01"], "seen_payables": NO_HASH}),
    Action("approve run", f"/ledger/payouts/{RUN}/approve/", "ApprovePayoutRun", lambda: {
        "command_id": new_command_id(), "seen_hash": NO_HASH, "otp_token": "123456"}),
    Action("cancel run", f"/ledger/payouts/{RUN}/cancel/", "CancelPayoutRun", lambda: {
        "command_id": new_command_id(), "reason": "superseded", "revision": "1"}),
    Action("request address change", "/ledger/recipients/request/", "UpdateRecipient", lambda: {
        "command_id": new_command_id(), "recipient_id": "demo-artist-01", "payout_address": "0x" + "7a" * 32,
        "evidence": "signed by the new address"}),
    Action("approve address change", f"/ledger/recipients/{UPDATE}/approve/", "UpdateRecipient", lambda: {
        "command_id": new_command_id(), "otp_token": "123456"}),
    Action("decline address change", f"/ledger/recipients/{UPDATE}/decline/", "UpdateRecipient", lambda: {
        "command_id": new_command_id(), "reason": "requested_in_error"}),
    Action("provision", "/ledger/accounts/new/", "RegisterAccount", lambda: {
        "command_id": new_command_id(), "kind": "staff", "account_id": "forged-admin", "identity": "f@porto.test",
        "roles": ["ops"]}),
    Action("change account", f"/ledger/accounts/{ACCOUNT}/", "RegisterAccount", lambda: {
        "command_id": new_command_id(), "revision": "1", "roles": []}),
]


def client_with_roles(roles: list[str], name: str = "probe") -> Client:
    user, _ = sync_user(name, roles=roles, active=True)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("role", [*CONSOLE_ROLES, None])
@pytest.mark.parametrize("url", list(SCREENS))
def test_each_screen_opens_exactly_for_its_roles(ledger, db, hold, url, role):
    response = client_with_roles([role] if role else []).get(url.format(hold=hold))
    assert response.status_code == (200 if role in SCREENS[url] else 403)


@pytest.mark.parametrize("role", CONSOLE_ROLES)
@pytest.mark.parametrize("action", ACTIONS, ids=lambda action: action.name)
def test_each_action_is_refused_to_roles_without_the_ledger_capability(ledger, db, hold, action, role):
    """A forged post by a role the command does not allow is refused before anything reaches the ledger."""
    head = ledger.head()
    response = client_with_roles([role]).post(action.url.format(hold=hold), action.data())
    if role in command_roles(action.command_type):
        assert response.status_code in (200, 302)
    else:
        assert response.status_code == 403
        assert ledger.head() == head


LEDGER_CHECKED = [action for action in ACTIONS if action.name in ("provision", "change account", "decide hold",
                                                                   "request address change")]


@pytest.mark.parametrize("action", LEDGER_CHECKED, ids=lambda action: action.name)
def test_a_console_group_the_ledger_does_not_grant_is_refused_by_the_ledger(ledger, db, hold, action):
    """An auditor actor put into the command's group in Django alone: the view lets it through, the ledger does not."""
    granted = sorted(command_roles(action.command_type))[0]
    client = client_with_roles([granted], name=STAFF["auditor"])
    head = ledger.head()
    response = client.post(action.url.format(hold=hold), action.data(), follow=True)
    entry = ledger.journal_entry(head.sequence + 1)
    assert (entry["envelope"]["actor_id"], entry["outcome"]) == (STAFF["auditor"], "rejected")
    assert entry["result"]["code"] == "CAPABILITY_MISSING"
    assert "Not allowed: CAPABILITY_MISSING" in response.content.decode()
    assert not User.objects.filter(username="forged-admin").exists()


def test_anonymous_posts_are_sent_to_sign_in_and_change_nothing(ledger, db, hold):
    head = ledger.head()
    for action in ACTIONS:
        response = Client().post(action.url.format(hold=hold), action.data())
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert ledger.head() == head
