"""Dispatch on the dashboard: everyone sees the state and its reason; admins pause it and, after a restore
and a clean reconcile, resume it, always with a reason."""

from __future__ import annotations

import pytest

from porto_console.console.roles import CONSOLE_ROLES
from tests.console.test_dashboard import card, is_red
from tests.console.test_permissions import client_with_roles

RESTORED = {"enabled": False, "reason": "loaded from a checkpoint; reconcile first"}


def dispatch(ledger) -> dict:
    state = ledger.dispatch_state()
    return {"enabled": state["enabled"], "reason": state["reason"]}


def test_everyone_sees_the_state_and_the_reason_and_disabled_is_red(client_as, ledger):
    ledger.set_dispatch(False, RESTORED["reason"])
    page = client_as("finance").get("/ledger/").content.decode()
    assert is_red(page, "dispatch")
    assert 'id="dispatch-state">disabled<' in page and f'id="dispatch-reason">{RESTORED["reason"]}<' in page
    assert "<form" not in card(page, "dispatch")


def test_an_admin_is_offered_resume_after_a_restore_and_pause_while_enabled(client_as, ledger):
    assert 'value="Pause dispatch"' in client_as("admin").get("/ledger/").content.decode()
    ledger.set_dispatch(False, RESTORED["reason"])
    page = client_as("admin").get("/ledger/").content.decode()
    assert 'value="Resume dispatch"' in page and "reconcile has exited 0" in page


def test_an_admin_resumes_with_a_reason_that_names_them(client_as, ledger):
    ledger.set_dispatch(False, RESTORED["reason"])
    response = client_as("admin").post("/ledger/dispatch/", {"enabled": "1", "reason": "reconcile exited 0"},
                                       follow=True)
    assert dispatch(ledger) == {"enabled": True, "reason": "demo-admin: reconcile exited 0"}
    page = response.content.decode()
    assert "Dispatch resumed." in page and 'id="dispatch-state">enabled<' in page and not is_red(page, "dispatch")


def test_an_admin_pauses_dispatch(client_as, ledger):
    client_as("admin").post("/ledger/dispatch/", {"enabled": "0", "reason": "restoring tonight"})
    assert dispatch(ledger) == {"enabled": False, "reason": "demo-admin: restoring tonight"}


@pytest.mark.parametrize("data", [{"enabled": "1"}, {"enabled": "1", "reason": ""}, {"enabled": "yes", "reason": "x"},
                                  {"reason": "no state"}])
def test_a_switch_without_a_reason_or_a_state_changes_nothing(client_as, ledger, data):
    ledger.set_dispatch(False, RESTORED["reason"])
    response = client_as("admin").post("/ledger/dispatch/", data, follow=True)
    assert dispatch(ledger) == RESTORED
    assert "Give a reason for pausing or resuming dispatch." in response.content.decode()


@pytest.mark.parametrize("role", [*CONSOLE_ROLES, None])
def test_only_admins_may_switch_dispatch(ledger, db, role):
    ledger.set_dispatch(False, RESTORED["reason"])
    response = client_with_roles([role] if role else []).post("/ledger/dispatch/", {"enabled": "1", "reason": "go"})
    if role == "admin":
        assert response.status_code == 302 and dispatch(ledger)["enabled"]
    else:
        assert response.status_code == 403 and dispatch(ledger) == RESTORED


def test_switching_is_a_post(client_as, ledger):
    assert client_as("admin").get("/ledger/dispatch/").status_code == 405
