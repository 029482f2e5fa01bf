"""``/metrics``: refused without the bearer token; with it, every family, and values that follow the ledger."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from ledger_engine.demo.builder import DEMO_STEP_UP_KEY
from porto_console import ledger as console_ledger
from porto_console.console import safety
from porto_console.console.services.quarantine import quarantine
from porto_console.effects.backups import take_backup
from tests.conftest import EnvelopeFactory
from tests.console.operations import families, halt_with_a_disk_fault, samples
from tests.money_payouts.world import RECIPIENTS
from tests.support.deployment_keys import keys_of_its_own
from tests.support.dispatch_switch import pause

TOKEN = "metrics-token-for-the-test-scraper-0123456789"
FAMILIES = {"porto_commands", "porto_command_commit_seconds", "porto_commit_group_size", "porto_outbox_effects",
            "porto_quarantined_effects", "porto_backup_age_seconds", "porto_backup_sequence", "porto_backup_overdue",
            "porto_payments", "porto_payments_overdue", "porto_ledger_halted", "porto_ledger_head_sequence",
            "porto_dispatch_enabled", "porto_dispatch_paused_info"}


@pytest.fixture
def token(settings):
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


def scrape() -> str:
    response = Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}").get("/metrics")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    return response.content.decode()


def test_without_a_configured_token_metrics_are_off(ledger, settings):
    settings.METRICS_TOKEN = None
    response = Client(HTTP_AUTHORIZATION="Bearer anything").get("/metrics")
    assert (response.status_code, response.json()["code"]) == (403, "METRICS_DISABLED")


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x", "Bearer "])
def test_a_request_without_the_token_is_401(ledger, token, authorization):
    client = Client(HTTP_AUTHORIZATION=authorization) if authorization else Client()
    response = client.get("/metrics")
    assert (response.status_code, response.json()["code"]) == (401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert b"porto_" not in response.content


def test_every_family_is_served_and_command_metrics_count_each_command(ledger, token, backup_repository):
    take_backup(ledger, settings.ADMISSION_DIR)
    before = samples(scrape())
    envelopes = EnvelopeFactory()
    envelopes.advance_to(ledger.admission_floor_ms())
    account = envelopes.account("metrics-probe")
    console_ledger.gateway().submit(account)
    console_ledger.gateway().submit(account)  # the same command again: answered from its stored result
    text = scrape()
    after = samples(text)
    assert FAMILIES <= families(text)
    accepted = ("porto_commands_total", (("command_type", "RegisterAccount"), ("outcome", "accepted")))
    duplicate = ("porto_commands_total", (("command_type", "RegisterAccount"), ("outcome", "duplicate")))
    assert after[accepted] == before.get(accepted, 0) + 1
    assert after[duplicate] == before.get(duplicate, 0) + 1
    count = ("porto_command_commit_seconds_count", ())
    assert after[count] == before[count] + 2
    assert after[("porto_commit_group_size_count", ())] == before[("porto_commit_group_size_count", ())] + 2
    assert after[("porto_ledger_head_sequence", ())] == before[("porto_ledger_head_sequence", ())] + 1
    assert after[("porto_backup_sequence", ())] == ledger.head().sequence - 1
    assert after[("porto_backup_overdue", ())] == 0 and after[("porto_ledger_halted", ())] == 0


def test_payments_outbox_and_quarantine_follow_the_ledger(payouts_world, token):
    plan = {recipient: payouts_world.payable_line_ids(recipient) for recipient in RECIPIENTS}
    payment_count = lambda state: samples(scrape())[("porto_payments", (("state", state),))]
    assert payment_count("prepared") == payment_count("approved") == 0
    assert payouts_world.prepare("run-metrics", plan).accepted
    assert payment_count("prepared") == len(RECIPIENTS)
    assert payouts_world.approve("run-metrics", payouts_world.confirmed_statements(plan)).accepted
    after = samples(scrape())
    assert after[("porto_payments", (("state", "approved"),))] == len(RECIPIENTS)
    assert after[("porto_payments", (("state", "prepared"),))] == 0
    assert after[("porto_outbox_effects", (("kind", "payment.transfer"), ("status", "pending")))] == len(RECIPIENTS)
    assert after[("porto_quarantined_effects", ())] == 0
    quarantine().add("run-metrics.artist-a.effect", "payment", "refused by the chain", 3)
    assert samples(scrape())[("porto_quarantined_effects", ())] == 1


def test_a_payment_left_in_flight_past_its_expiry_is_counted_overdue(payouts_world, token, monkeypatch):
    from ledger_engine.selectors.payout_queries import OVERDUE_AFTER_MS
    from porto_console.operations import health

    expires_at_ms = payouts_world.leave_in_flight("run-metrics", "artist-a", "attempt-stuck")
    monkeypatch.setattr(health, "now_ms", lambda: expires_at_ms + OVERDUE_AFTER_MS)
    assert samples(scrape())[("porto_payments_overdue", ())] == 0
    monkeypatch.setattr(health, "now_ms", lambda: expires_at_ms + OVERDUE_AFTER_MS + 1)
    assert samples(scrape())[("porto_payments_overdue", ())] == 1


def test_a_paused_dispatch_names_who_paused_it_and_not_why(ledger, token):
    paused = ("porto_dispatch_paused_info", (("cause", "decision"), ("paused_by", "demo-ops-1")))
    before = samples(scrape())
    assert before[("porto_dispatch_enabled", ())] == 1 and paused not in before
    pause(ledger, actor="demo-ops-1", reason="rotating the payer key", key=DEMO_STEP_UP_KEY)
    text = scrape()
    after = samples(text)
    assert after[("porto_dispatch_enabled", ())] == 0 and after[paused] == 1
    assert "rotating" not in text  # the stated reason is free text: the dashboard shows it, labels never do


def test_a_halted_ledger_still_scrapes_and_says_so(ledger, token, monkeypatch):
    halt_with_a_disk_fault(ledger, monkeypatch)
    after = samples(scrape())
    assert after[("porto_ledger_halted", ())] == 1
    halted = ("porto_commands_total", (("command_type", "RegisterAccount"), ("outcome", "halted")))
    assert after[halted] >= 1


def test_outside_the_demo_a_short_metrics_token_stops_the_console(ledger, settings, monkeypatch):
    monkeypatch.setattr(safety, "is_demo", lambda ledger: False)
    keys_of_its_own(settings)
    settings.METRICS_TOKEN = "short"
    [problem] = safety.problems(ledger)
    assert problem.startswith("PORTO_METRICS_TOKEN is shorter than 32")
    settings.METRICS_TOKEN = None  # no token: metrics are off, and that is no reason to refuse
    assert safety.problems(ledger) == []
