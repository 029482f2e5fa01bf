"""Payout runs (finance): prepare, four eyes, step-up approval, cancel, payments and reconciliation.

The ledger comes from the payout tests' world: real funding, budgets,
allocation and confirmed statements for every recipient.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.application.envelopes import build_envelope
from ledger_engine.layout import OUTBOX, STATE
from ledger_engine.selectors import payout_queries
from porto_console.console.commands import journalled_id, new_command_id
from porto_console.console.handles import seal
from porto_console.console.services import payouts as service
from porto_console.console.views.payouts import run_url
from porto_console.ledger import gateway as console_gateway
from tests.console.conftest import code_for
from tests.money_allocation.world import FINANCE, FINANCE_2
from tests.money_payouts.world import RECIPIENTS


def prepare(client: Client) -> str:
    """Prepare a run of everything payable, as the form offers it; returns the run ID."""
    page = client.get("/ledger/payouts/prepare/").content.decode()
    fields = dict(re.findall(r'name="(command_id|seen_payables)" value="([^"]+)"', page))
    recipients = re.findall(r'name="recipients" value="([^"]+)"[^>]*checked', page)
    response = client.post("/ledger/payouts/prepare/", {**fields, "recipients": recipients})
    assert response.status_code == 302
    return service.run_id_for(fields["command_id"])


def confirmed_statements(payouts_world) -> list[str]:
    """Each recipient's newest confirmed statement, as an approval cites them."""
    return sorted(payouts_world.owner.read(payout_queries.newest_confirmed_statements).values())


def run_page(client: Client, run_id: str) -> str:
    return client.get(f"/ledger/payouts/{seal('run', run_id)}/").content.decode()


def approve(client: Client, run_id: str, payouts_world, *, code: str, command_id: str | None = None):
    run = payouts_world.state(f"payment_run/{run_id}")
    return client.post(f"/ledger/payouts/{seal('run', run_id)}/approve/", {
        "command_id": command_id or new_command_id(), "seen_hash": run["run_hash"], "otp_token": code}, follow=True)


def test_prepare_offers_every_payable_recipient_and_freezes_the_run(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    run = payouts_world.state(f"payment_run/{run_id}")
    assert run["status"] == "prepared" and run["prepared_by"] == FINANCE
    assert sorted(payment["recipient_id"] for payment in run["frozen"]["payments"]) == sorted(RECIPIENTS)
    for payment in run["frozen"]["payments"]:
        assert payment["line_ids"] == payouts_world.payable_line_ids(payment["recipient_id"])
    page = run_page(finance[FINANCE], run_id)
    assert run["run_hash"] in page and "recomputed from the frozen run" in page
    assert "You prepared this run: another finance user must approve it (four eyes)." in page


def test_the_preparer_cannot_approve_even_with_a_forged_post(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    head = payouts_world.owner.head().sequence
    response = approve(finance[FINANCE], run_id, payouts_world, code=code_for(FINANCE))
    assert "Not allowed: FOUR_EYES_REQUIRED" in response.content.decode()
    assert payouts_world.owner.journal_entry(head + 1)["result"]["code"] == "FOUR_EYES_REQUIRED"
    assert payouts_world.state(f"payment_run/{run_id}")["status"] == "prepared"


def test_another_finance_user_approves_with_a_current_code_and_payments_are_queued(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    response = approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2))
    page = response.content.decode()
    assert "Payout run approved" in page
    run = payouts_world.state(f"payment_run/{run_id}")
    assert run["status"] == "approved" and run["approval"]["approved_by"] == FINANCE_2
    for payment in run["frozen"]["payments"]:
        assert payouts_world.state(f"payment/{payment['payment_id']}")["state"] == "approved"
        assert payouts_world.owner.get(OUTBOX, payment["effect_id"]).data["status"] == "pending"
    assert page.count('<td class="payment-state"><span class="enum" title="approved">Approved</span></td>') == len(RECIPIENTS)


@pytest.mark.parametrize("code", ["000000", "12345", ""])
def test_approval_without_a_valid_code_submits_nothing(finance, payouts_world, code):
    run_id = prepare(finance[FINANCE])
    head = payouts_world.owner.head()
    response = approve(finance[FINANCE_2], run_id, payouts_world, code=code)
    assert payouts_world.owner.head() == head
    assert re.search(r"authenticator code is not valid|Enter the 6-digit code", response.content.decode())


def test_a_code_already_accepted_at_sign_in_says_to_wait_for_the_next_one(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    code = code_for(FINANCE_2)
    assert TOTPDevice.objects.get(user__username=FINANCE_2).verify_token(code)  # signing in took this code
    head = payouts_world.owner.head()
    page = approve(finance[FINANCE_2], run_id, payouts_world, code=code).content.decode()
    assert payouts_world.owner.head() == head
    assert re.search(r"That code was already used, for a sign-in or another approval\. Wait for your "
                     r"authenticator&#x27;s next code \(in ([1-9]|[12][0-9]|30) s\)", page), page[-3000:]


def test_after_wrong_codes_the_wait_is_stated_and_the_code_is_not_tried(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    device = TOTPDevice.objects.get(user__username=FINANCE_2)
    device.throttling_failure_count, device.throttling_failure_timestamp = 10, timezone.now()  # 512 s to wait
    device.save()
    head = payouts_world.owner.head()
    page = approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2)).content.decode()
    assert payouts_world.owner.head() == head
    wait = re.search(r"Too many wrong codes in a row: wait (\d+) s", page)
    assert wait and 0 < int(wait.group(1)) <= 512, page[-3000:]
    device.refresh_from_db()
    assert device.throttling_failure_count == 10  # a refused try does not lengthen the wait


def test_lines_in_a_waiting_run_are_marked_and_left_out_of_a_new_run(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    page = finance[FINANCE].get("/ledger/payouts/prepare/").content.decode()
    assert page.count(f"In run <a href=\"{run_url(run_id)}\">{run_id}</a>, waiting for approval") == len(RECIPIENTS)
    assert not re.findall(r'name="recipients" value="([^"]+)"[^>]*checked', page)
    fields = dict(re.findall(r'name="(command_id|seen_payables)" value="([^"]+)"', page))
    head = payouts_world.owner.head()
    refused = finance[FINANCE].post("/ledger/payouts/prepare/", {**fields, "recipients": list(RECIPIENTS)},
                                    follow=True).content.decode()
    assert payouts_world.owner.head() == head
    assert f"Already in a run waiting for approval: {RECIPIENTS[0]} (run {run_id})" in refused


def test_a_run_whose_lines_another_run_paid_first_says_so_and_keeps_the_approvers_code(finance, payouts_world):
    first, second = "run-first", "run-second"
    assert payouts_world.prepare(first).accepted and payouts_world.prepare(second).accepted  # as before the check
    statements = confirmed_statements(payouts_world)
    assert payouts_world.approve(second, statements).accepted
    page = run_page(finance[FINANCE_2], first)
    assert "This run can never be approved: some of its lines are no longer payable" in page
    head, code = payouts_world.owner.head(), code_for(FINANCE_2)
    answer = approve(finance[FINANCE_2], first, payouts_world, code=code).content.decode()
    assert "This run can never be approved" in answer and payouts_world.owner.head() == head
    assert TOTPDevice.objects.get(user__username=FINANCE_2).verify_token(code)  # the code was not spent
    dashboard = finance[FINANCE_2].get("/ledger/").content.decode()
    assert 'id="runs-never-approvable">of which 1 can never be approved' in dashboard
    assert re.search(r'id="waiting-stale-runs">.*?<p class="figure">1</p>', dashboard, re.S)
    assert re.search(r'id="waiting-runs">.*?<p class="figure">0</p>', dashboard, re.S)


def test_a_double_submitted_approval_executes_once(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    command_id, code = new_command_id(), code_for(FINANCE_2)
    approve(finance[FINANCE_2], run_id, payouts_world, code=code, command_id=command_id)
    head = payouts_world.owner.head()
    again = approve(finance[FINANCE_2], run_id, payouts_world, code=code, command_id=command_id)
    assert payouts_world.owner.head() == head
    assert "already submitted: this is the original answer" in again.content.decode()


def test_a_reposted_preparation_gets_its_answer_though_its_payables_are_paid_since(finance, payouts_world):
    client = finance[FINANCE]
    page = client.get("/ledger/payouts/prepare/").content.decode()
    fields = dict(re.findall(r'name="(command_id|seen_payables)" value="([^"]+)"', page))
    recipients = re.findall(r'name="recipients" value="([^"]+)"[^>]*checked', page)
    client.post("/ledger/payouts/prepare/", {**fields, "recipients": recipients})
    run_id = service.run_id_for(fields["command_id"])
    payouts_world.approve(run_id, confirmed_statements(payouts_world), actor=FINANCE_2)
    head = payouts_world.owner.head()
    again = client.post("/ledger/payouts/prepare/", {**fields, "recipients": recipients}, follow=True)
    assert payouts_world.owner.head() == head
    assert "already submitted: this is the original answer" in again.content.decode()
    assert again.redirect_chain[-1][0] == f"/ledger/payouts/{seal('run', run_id)}/"


def test_an_answered_approval_reposted_for_another_run_is_a_conflict(finance, payouts_world):
    first, second = "run-first", "run-second"
    for run_id, recipient in ((first, RECIPIENTS[0]), (second, RECIPIENTS[1])):
        assert payouts_world.prepare(run_id, {recipient: payouts_world.payable_line_ids(recipient)}).accepted
    command_id = new_command_id()
    approve(finance[FINANCE_2], first, payouts_world, code=code_for(FINANCE_2), command_id=command_id)
    head = payouts_world.owner.head()
    response = approve(finance[FINANCE_2], second, payouts_world, code=code_for(FINANCE_2), command_id=command_id)
    page = response.content.decode()
    assert "COMMAND_ID_CONFLICT" in page and "already submitted" not in page
    assert payouts_world.owner.head() == head
    assert payouts_world.state(f"payment_run/{second}")["status"] == "prepared"


def test_someone_elses_form_id_is_a_new_command_of_ones_own_not_their_answer(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    command_id = new_command_id()
    approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2), command_id=command_id)
    head = payouts_world.owner.head()
    response = approve(finance[FINANCE], run_id, payouts_world, code=code_for(FINANCE), command_id=command_id)
    page = response.content.decode()
    assert "already submitted" not in page and "Not allowed: INVALID_STATE" in page
    assert payouts_world.owner.head().sequence == head.sequence + 1
    refused = payouts_world.owner.journal_entry(head.sequence + 1)["envelope"]
    assert refused["actor_id"] == FINANCE and refused["command_id"] == journalled_id(FINANCE, command_id)


def test_a_run_is_refused_if_the_payables_changed_after_the_form_was_shown(finance, payouts_world):
    client = finance[FINANCE]
    page = client.get("/ledger/payouts/prepare/").content.decode()
    fields = dict(re.findall(r'name="(command_id|seen_payables)" value="([^"]+)"', page))
    payouts_world.approve(payouts_world.state(f"payment_run/{prepare(finance[FINANCE_2])}")["run_id"],
                  confirmed_statements(payouts_world), actor=FINANCE)
    head = payouts_world.owner.head()
    response = client.post("/ledger/payouts/prepare/", {**fields, "recipients": list(RECIPIENTS)}, follow=True)
    assert "The payables changed since the form was shown" in response.content.decode()
    assert payouts_world.owner.head() == head


def test_cancelling_keeps_the_run_as_a_tombstone_with_the_reason(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    revision = payouts_world.owner.get(STATE, f"payment_run/{run_id}").revision
    response = finance[FINANCE_2].post(f"/ledger/payouts/{seal('run', run_id)}/cancel/", {
        "command_id": new_command_id(), "reason": "amounts_disputed", "revision": str(revision), "confirmed": "True"},
        follow=True)
    assert "Payout run cancelled" in response.content.decode()
    run = payouts_world.state(f"payment_run/{run_id}")
    assert run["status"] == "cancelled" and run["tombstone"]["reason"] == "amounts_disputed"
    assert "The run is cancelled; only a prepared run can be approved." in response.content.decode()


def a_signed_payment(finance, payouts_world) -> tuple[str, dict]:
    """One approved run, its first payment signed as ``attempt-1``: the run ID and that payment."""
    run_id = prepare(finance[FINANCE])
    approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2))
    payment = payouts_world.state(f"payment_run/{run_id}")["frozen"]["payments"][0]
    assert payouts_world.claim(payment["effect_id"]).accepted
    assert payouts_world.sign(payment["payment_id"], "attempt-1").accepted
    return run_id, payment


def test_payments_show_their_state_and_what_reconciliation_needs(finance, payouts_world):
    run_id, payment = a_signed_payment(finance, payouts_world)
    page = finance[FINANCE].get("/ledger/payouts/payments/", {"state": "signed"}).content.decode()
    reconciliation = page.split('id="reconciliation"')[1].split("</table>")[0]
    attempt = payouts_world.state("payment_attempt/attempt-1") or {}
    assert payment["payment_id"] in reconciliation
    assert attempt.get("transaction_hash", "")[:12] in reconciliation
    listed = page.split('id="payments"')[1]
    assert payment["payment_id"] in listed


def test_cancel_asks_first_listing_what_will_happen_then_journals_reason_and_note(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    revision = payouts_world.owner.get(STATE, f"payment_run/{run_id}").revision
    url = f"/ledger/payouts/{seal('run', run_id)}/cancel/"
    head = payouts_world.owner.head()
    asked = finance[FINANCE_2].post(url, {"command_id": new_command_id(), "reason": "amounts_disputed",
                                          "note": "artist-a disputes day 2", "revision": str(revision)})
    page = asked.content.decode()
    assert asked.status_code == 200 and payouts_world.owner.head() == head
    listed = page.split('id="cancelled-payments"')[1].split("</table>")[0]
    assert listed.count("<tr>") == 1 + len(payouts_world.state(f"payment_run/{run_id}")["frozen"]["payments"])
    assert "artist-a disputes day 2" in page
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page.split('id="cancel-confirm"')[1]))
    assert fields["confirmed"] == "True" and fields["reason"] == "amounts_disputed"
    done = finance[FINANCE_2].post(url, fields, follow=True).content.decode()
    assert "Payout run cancelled" in done and 'id="cancel-note">artist-a disputes day 2<' in done
    run = payouts_world.state(f"payment_run/{run_id}")
    assert run["status"] == "cancelled" and run["tombstone"]["note_digest"]
    entry = payouts_world.owner.journal_entry(payouts_world.owner.head().sequence)
    assert entry["envelope"]["payload"]["note_digest"] == run["tombstone"]["note_digest"]
    assert "artist-a disputes" not in str(entry)


def test_the_run_list_shows_approved_runs_by_default_so_they_can_be_cancelled(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2))
    assert payouts_world.state(f"payment_run/{run_id}")["status"] == "approved"
    assert seal("run", run_id) in finance[FINANCE].get("/ledger/payouts/").content.decode()
    cancelled = finance[FINANCE].get("/ledger/payouts/", {"status": "all"}).content.decode()
    assert seal("run", run_id) in cancelled


def test_a_stored_approval_dated_ahead_is_refused_and_moves_no_clock(finance, payouts_world):
    """An admission tree restored from a backup could hold this approval's envelope dated years ahead."""
    run_id = prepare(finance[FINANCE])
    command_id = new_command_id()
    request = service.approve(run_id, payouts_world.state(f"payment_run/{run_id}")["run_hash"],
                              payouts_world.owner.read(lambda view: payout_queries.approval_citations(view, run_id)))
    admission = console_gateway()
    admission.envelopes.store(build_envelope(
        request.command_type, request.payload, command_id=journalled_id(FINANCE_2, command_id), actor_id=FINANCE_2,
        admitted_at_ms=admission.now_ms() + 10 * 365 * 86_400_000))
    head, floor = payouts_world.owner.head(), payouts_world.owner.admission_floor_ms()
    response = approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2), command_id=command_id)
    assert "COMMAND_ID_CONFLICT" in response.content.decode()
    assert (payouts_world.owner.head(), payouts_world.owner.admission_floor_ms()) == (head, floor)


def test_an_approved_runs_page_links_each_recipients_cited_statement_file(finance, payouts_world):
    run_id = prepare(finance[FINANCE])
    approve(finance[FINANCE_2], run_id, payouts_world, code=code_for(FINANCE_2))
    run = payouts_world.state(f"payment_run/{run_id}")
    assert run["status"] == "approved"
    page = run_page(finance[FINANCE], run_id)
    links = re.findall(r'<a class="statement-file" href="([^"]+)">Statement file</a>', page)
    assert len(links) == len(RECIPIENTS)
    cited = {payouts_world.state(f"statement/{statement_id}")["recipient_id"]: statement_id
             for statement_id in run["approval"]["statement_ids"]}
    assert sorted(links) == sorted(f"/ledger/statements/{seal('statement', statement_id)}/file/"
                                   for statement_id in cited.values())
