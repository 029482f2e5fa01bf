"""``/healthz`` in each state: ready, dispatch paused, backup overdue, halted; no sign-in, no secrets."""

from __future__ import annotations

from django.conf import settings
from django.test import Client

from ledger_engine.demo.builder import DEMO_STEP_UP_KEY
from porto_console import ledger as console_ledger
from porto_console.effects.backups import STALE_AFTER_MS, take_backup
from porto_console.operations import health
from tests.console.operations import DISK_FAULT, halt_with_a_disk_fault
from tests.support.dispatch_switch import pause

MINUTE_MS = 60_000


def healthz():
    response = Client().get("/healthz")
    return response.status_code, response.json()


def test_a_fresh_console_with_a_good_backup_is_ready(ledger, backup_repository):
    backup = take_backup(ledger, settings.ADMISSION_DIR)
    status, body = healthz()
    assert (status, body["status"], body["conditions"]) == (200, "ready", [])
    assert body["sequence"] == ledger.head().sequence and body["dispatch_enabled"] is True
    assert body["backup"]["sequence"] == backup["sequence"] and 0 <= body["backup"]["age_s"] < 60
    assert body["halt_cause"] is None


def test_a_console_just_started_has_time_to_take_its_first_backup(ledger):
    assert healthz()[0] == 200


def test_paused_dispatch_is_202_and_still_in_service(ledger, backup_repository):
    take_backup(ledger, settings.ADMISSION_DIR)
    pause(ledger, actor="demo-admin", reason="operator pause for a health probe", key=DEMO_STEP_UP_KEY)
    status, body = healthz()
    assert (status, body["status"], body["dispatch_enabled"]) == (202, "dispatch_paused", False)
    assert "operator pause" not in str(body)  # the operator's reason text is not for probes


def test_a_backup_older_than_five_minutes_is_overdue(ledger, backup_repository, monkeypatch):
    backup = take_backup(ledger, settings.ADMISSION_DIR)
    monkeypatch.setattr(health, "now_ms", lambda: backup["created_at_ms"] + STALE_AFTER_MS + MINUTE_MS)
    status, body = healthz()
    assert (status, body["status"], body["conditions"]) == (203, "backup_overdue", ["backup_overdue"])
    assert body["backup"]["age_s"] > STALE_AFTER_MS / 1000


def test_no_backup_five_minutes_after_start_is_overdue(ledger, monkeypatch):
    monkeypatch.setattr(health, "now_ms", lambda: console_ledger.opened_at_ms() + STALE_AFTER_MS + MINUTE_MS)
    status, body = healthz()
    assert (status, body["status"], body["backup"]) == (203, "backup_overdue", None)


def test_overdue_outranks_paused_and_both_are_listed(ledger, monkeypatch):
    pause(ledger, actor="demo-admin", key=DEMO_STEP_UP_KEY)
    monkeypatch.setattr(health, "now_ms", lambda: console_ledger.opened_at_ms() + STALE_AFTER_MS + MINUTE_MS)
    status, body = healthz()
    assert (status, body["conditions"]) == (203, ["backup_overdue", "dispatch_paused"])


def test_a_halted_ledger_is_503_with_its_cause_code_and_no_detail(ledger, backup_repository, monkeypatch):
    take_backup(ledger, settings.ADMISSION_DIR)
    halt_with_a_disk_fault(ledger, monkeypatch)
    status, body = healthz()
    assert (status, body["status"], body["halt_cause"]) == (503, "halted", "LEDGER_HALTED")
    assert body["dispatch_enabled"] is None and DISK_FAULT not in str(body)
    assert set(body) == {"status", "conditions", "sequence", "dispatch_enabled", "halt_cause", "backup"}


def test_healthz_needs_no_sign_in_reads_only_and_is_never_cached(ledger):
    response = Client().get("/healthz")
    assert response.status_code == 200 and "no-cache" in response["Cache-Control"]
    assert Client().post("/healthz").status_code == 405
    assert Client().head("/healthz").status_code == 200
