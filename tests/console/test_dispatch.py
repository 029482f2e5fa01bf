"""Dispatch on the dashboard: everyone sees whether it runs and who paused it, when and why; an admin or ops
member pauses it with a reason and their authenticator code, and resuming takes two people (docs/adr/0091)."""

from __future__ import annotations

import pytest

from ledger_engine.demo.builder import DEMO_STEP_UP_KEY
from porto_console.console.commands import new_command_id
from porto_console.console.services.users import issue_credentials
from tests.console.conftest import STAFF, code_for
from tests.console.test_dashboard import card, is_red
from tests.support.dispatch_switch import pause

ADMIN, ADMIN_2, OPS = STAFF["admin"], STAFF["admin2"], STAFF["ops"]


@pytest.fixture
def enrolled(users):
    """The admins and the ops member, each with an authenticator."""
    for name in ("admin", "admin2", "ops"):
        issue_credentials(users[name])
    return users


def post_pause(client, username: str, reason: str = "rotating the payer key", code: str | None = None):
    return client.post("/ledger/dispatch/pause/", {"command_id": new_command_id(), "reason": reason,
                                                   "otp_token": code or code_for(username)}, follow=True)


def post_request(client, reason: str = "new payer funded"):
    return client.post("/ledger/dispatch/resume/", {"command_id": new_command_id(), "reason": reason}, follow=True)


def post_approve(client, username: str, resume_id: str):
    return client.post("/ledger/dispatch/resume/approve/", {"command_id": new_command_id(), "resume_id": resume_id,
                                                            "otp_token": code_for(username)}, follow=True)


def test_everyone_sees_who_paused_dispatch_when_and_why_and_paused_is_red(client_as, ledger):
    pause(ledger, actor=OPS, reason="rotating the payer key", key=DEMO_STEP_UP_KEY)
    page = client_as("finance").get("/ledger/").content.decode()
    assert is_red(page, "dispatch")
    assert 'id="dispatch-state">disabled<' in page and 'id="dispatch-reason">rotating the payer key<' in page
    assert f'id="dispatch-paused-by">{OPS}<' in card(page, "dispatch")
    assert "<form" not in card(page, "dispatch")


def test_an_ops_member_pauses_with_a_reason_and_a_code_and_the_journal_names_them(client_as, ledger, enrolled):
    head = ledger.head().sequence
    page = post_pause(client_as("ops"), OPS).content.decode()
    assert "Dispatch paused" in page and 'id="dispatch-state">disabled<' in page
    state = ledger.dispatch_state()
    assert (state["enabled"], state["paused_by"], state["reason"]) == (False, OPS, "rotating the payer key")
    entry = ledger.journal_entry(head + 1)
    assert (entry["envelope"]["command_type"], entry["envelope"]["actor_id"], entry["outcome"]) == (
        "PauseDispatch", OPS, "accepted")


@pytest.mark.parametrize("code", ["000000", ""])
def test_a_pause_without_a_current_code_changes_nothing(client_as, ledger, enrolled, code):
    head = ledger.head()
    page = client_as("admin").post("/ledger/dispatch/pause/", {
        "command_id": new_command_id(), "reason": "incident", "otp_token": code}, follow=True).content.decode()
    assert ledger.head() == head and ledger.dispatch_state()["enabled"] is True
    assert "authenticator" in page


def test_a_pause_without_a_reason_changes_nothing(client_as, ledger, enrolled):
    head = ledger.head()
    post_pause(client_as("admin"), ADMIN, reason="")
    assert ledger.head() == head and ledger.dispatch_state()["enabled"] is True


def test_resume_is_requested_by_one_person_and_approved_by_another_admin(client_as, ledger, enrolled):
    post_pause(client_as("ops"), OPS)
    ops_page = post_request(client_as("ops")).content.decode()
    assert "Resume requested" in ops_page and 'id="dispatch-resume-request"' in ops_page
    waiting = ledger.dispatch_state()["resume_request"]
    assert waiting["requested_by"] == OPS and ledger.dispatch_state()["enabled"] is False

    admin_page = client_as("admin").get("/ledger/").content.decode()
    assert 'value="Approve resume"' in card(admin_page, "dispatch")
    page = post_approve(client_as("admin"), ADMIN, waiting["resume_id"]).content.decode()
    assert "Dispatch resumed" in page and 'id="dispatch-state">enabled<' in page and not is_red(page, "dispatch")
    switch = ledger.dispatch_state()["switch"]
    assert (switch["status"], switch["changed_by"], switch["requested_by"]) == ("running", ADMIN, OPS)


def test_the_admin_who_requested_a_resume_cannot_approve_it(client_as, ledger, enrolled):
    pause(ledger, actor=OPS, key=DEMO_STEP_UP_KEY)
    post_request(client_as("admin"))
    resume_id = ledger.dispatch_state()["resume_request"]["resume_id"]
    dashboard = card(client_as("admin").get("/ledger/").content.decode(), "dispatch")
    assert 'value="Approve resume"' not in dashboard and "four eyes" in dashboard
    page = post_approve(client_as("admin"), ADMIN, resume_id).content.decode()
    assert "FOUR_EYES_REQUIRED" in page and ledger.dispatch_state()["enabled"] is False
    post_approve(client_as("admin2"), ADMIN_2, resume_id)
    assert ledger.dispatch_state()["enabled"] is True


@pytest.mark.parametrize("name", ["finance", "auditor"])
def test_only_admin_and_ops_are_offered_the_switch(client_as, ledger, name):
    assert "<form" not in card(client_as(name).get("/ledger/").content.decode(), "dispatch")
    assert 'value="Pause dispatch"' in card(client_as("ops").get("/ledger/").content.decode(), "dispatch")


def test_switching_is_a_post(client_as, ledger):
    for path in ("pause/", "resume/", "resume/approve/", "resume/decline/"):
        assert client_as("admin").get(f"/ledger/dispatch/{path}").status_code == 405


def test_a_ledger_that_owes_a_reconciliation_offers_no_resume_and_says_what_to_do(client_as, ledger, monkeypatch):
    pause(ledger, actor=OPS, key=DEMO_STEP_UP_KEY)
    monkeypatch.setattr(ledger, "reconciliation_owed", {"reason": "restored from backup at sequence 9", "at_ms": 1})
    dashboard = card(client_as("admin").get("/ledger/").content.decode(), "dispatch")
    assert 'id="dispatch-owed"' in dashboard and "porto-ledger promote" in dashboard
    assert "<form" not in dashboard
    head = ledger.head()
    page = post_request(client_as("ops")).content.decode()
    assert "RECONCILIATION_REQUIRED" in page and ledger.head() == head
