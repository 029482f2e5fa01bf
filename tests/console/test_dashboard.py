"""Dashboard: head, conservation status, what waits for someone, and daily money charts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import INDEXES
from ledger_engine.projections.payouts import payment_state_prefix
from porto_console.console.views import dashboard as dashboard_view
from porto_console.effects import backups
from porto_console.effects.backups import take_backup
from tests.console.test_payouts import prepare
from tests.money_allocation.world import FINANCE
from tests.money_payouts.world import transaction_hash


def figure(page: str, element_id: str) -> int:
    return int(re.search(rf'id="{element_id}">(\d+)<', page).group(1))


def test_the_demo_dashboard_counts_open_holds_and_states_the_head(client_as, ledger):
    page = client_as("ops").get("/ledger/").content.decode()
    assert figure(page, "head-sequence") == ledger.head().sequence
    assert figure(page, "open-holds") == len(ledger.scan(INDEXES, "hold_open/", limit=100_000))
    assert figure(page, "open-holds") > 0


def test_waiting_work_and_daily_charts_follow_the_ledger(finance, payouts_world):
    client = finance[FINANCE]
    before = client.get("/ledger/").content.decode()
    assert figure(before, "runs-awaiting") == 0
    prepare(client)
    page = client.get("/ledger/").content.decode()
    assert figure(page, "runs-awaiting") == 1
    assert figure(page, "updates-awaiting") == 0 and figure(page, "uncertain-payments") == 0
    money = chart_data(page, "chart-money")
    series = {series["label"]: series["values"] for series in money["series"]}
    assert money["unit"] == "USDC" and money["labels"] and all(re.fullmatch(r"\d\d \w{3}", day) for day in money["labels"])
    assert sum(series["Allocated"]) > 0 and sum(series["Reserved"]) == sum(series["Paid"]) == 0
    assert '<canvas id="chart-money"' in page and "vendor/chartjs/chart.umd.min.js" in page


def test_a_payment_stuck_in_flight_past_its_expiry_shows_on_the_dashboard(finance, payouts_world, monkeypatch):
    from ledger_engine.selectors.payout_queries import OVERDUE_AFTER_MS
    from porto_console.console.services import dashboard as dashboard_service

    expires_at_ms = payouts_world.leave_in_flight("run-stuck", "artist-a", "attempt-stuck")
    assert payouts_world.complete("run-stuck.artist-a.effect", "submitted", transaction_hash("attempt-stuck")).accepted
    client = finance[FINANCE]
    monkeypatch.setattr(dashboard_service, "now_ms", lambda: expires_at_ms + OVERDUE_AFTER_MS)
    assert figure(client.get("/ledger/").content.decode(), "overdue-payments") == 0
    monkeypatch.setattr(dashboard_service, "now_ms", lambda: expires_at_ms + OVERDUE_AFTER_MS + 1)
    page = client.get("/ledger/").content.decode()
    assert figure(page, "overdue-payments") == 1 and figure(page, "uncertain-payments") == 0


def chart_data(page: str, chart_id: str) -> dict:
    """What the page hands Chart.js for one chart (its json_script block)."""
    found = re.search(rf'<script id="{chart_id}-data" type="application/json">(.*?)</script>', page, re.DOTALL)
    return json.loads(found.group(1))


def test_holds_by_age_and_payments_by_state_count_what_the_ledger_holds(client_as, ledger):
    page = client_as("auditor").get("/ledger/").content.decode()
    holds = chart_data(page, "chart-holds")
    assert sum(holds["series"][0]["values"]) == figure(page, "open-holds") > 0
    payments = chart_data(page, "chart-payments")
    shown = dict(zip(payments["labels"], payments["series"][0]["values"]))
    assert shown["Confirmed"] == len(ledger.scan(INDEXES, payment_state_prefix("confirmed"), limit=100_000)) > 0
    assert shown["Prepared"] >= 1  # the run the demo leaves waiting


def card(page: str, element_id: str) -> str:
    """One dashboard card's markup, from its opening tag to the end of the section."""
    return re.search(rf'<section class="[^"]*" id="{element_id}">.*?</section>', page, re.DOTALL).group(0)


def is_red(page: str, element_id: str) -> bool:
    return re.search(rf'<section class="card attention" id="{element_id}">', page) is not None


def test_without_a_verified_backup_the_backup_card_is_red(client_as):
    page = client_as("ops").get("/ledger/").content.decode()
    assert is_red(page, "backup") and 'id="backup-age">none<' in card(page, "backup")


def test_a_fresh_backup_shows_its_age_and_sequence_and_a_stale_one_is_red(
        client_as, ledger, backup_repository, settings, monkeypatch):
    backup = take_backup(ledger, settings.ADMISSION_DIR)
    page = client_as("ops").get("/ledger/").content.decode()
    assert not is_red(page, "backup")
    assert re.search(r'id="backup-age">\d+ s old<', page)
    assert f"sequence {ledger.head().sequence}, snapshot {backup['snapshot']}" in card(page, "backup")

    later = backup["created_at_ms"] + 6 * 60 * 1000
    monkeypatch.setattr(dashboard_view, "newest_good_backup", lambda: backups.newest_good_backup(now_ms=later))
    page = client_as("ops").get("/ledger/").content.decode()
    assert is_red(page, "backup") and 'id="backup-age">6 min old<' in page and "older than five minutes" in page


def test_a_backup_into_a_damaged_repository_does_not_count(client_as, ledger, backup_repository, settings, envelopes):
    first = take_backup(ledger, settings.ADMISSION_DIR)
    victim = next(path for path in sorted(Path(settings.BACKUP_REPOSITORY, "data").rglob("*")) if path.is_file())
    victim.write_bytes(victim.read_bytes() + b"x")
    with pytest.raises(LedgerError) as refused:  # restic check finds the damage: the new snapshot is not counted
        take_backup(ledger, settings.ADMISSION_DIR)
    assert refused.value.code == ErrorCode.BACKUP_REPOSITORY_FAILED
    page = client_as("ops").get("/ledger/").content.decode()
    assert f"snapshot {first['snapshot']}" in card(page, "backup")


def test_the_verify_card_shows_when_verify_last_ran_and_what_it_found(client_as, ledger):
    from ledger_engine.checkpoint.integrity import verify_owner

    page = client_as("ops").get("/ledger/").content.decode()
    assert is_red(page, "verified") and 'id="verified-result">never<' in card(page, "verified")
    report = verify_owner(ledger)
    page = client_as("ops").get("/ledger/").content.decode()
    assert not is_red(page, "verified") and 'id="verified-result">passed<' in card(page, "verified")
    assert f"at sequence {report['sequence']}" in card(page, "verified")


def _waiting(page: str, key: str) -> int:
    import re
    return int(re.search(rf'id="waiting-{key}">.*?<p class="figure">(\d+)</p>', page, re.S).group(1))


def test_waiting_for_me_counts_only_what_someone_else_made(client_as, ledger):
    from ledger_engine.selectors import payout_queries, staff_queries
    from tests.console.conftest import STAFF
    prepared = ledger.read(lambda view: list(payout_queries.runs(view, "prepared")))
    assert any(run.prepared_by == STAFF["finance"] for run in prepared), "the demo's waiting run"
    for name in ("finance", "finance2"):
        page = client_as(name).get("/ledger/").content.decode()
        expected = sum(1 for run in prepared if run.prepared_by != STAFF[name])
        assert _waiting(page, "runs") == expected
        assert _waiting(page, "recipient-updates") == sum(
            1 for update in ledger.read(lambda view: list(payout_queries.recipient_updates(view, "pending")))
            if update.requested_by != STAFF[name])
    preparer_sees = _waiting(client_as("finance").get("/ledger/").content.decode(), "runs")
    assert preparer_sees == _waiting(client_as("finance2").get("/ledger/").content.decode(), "runs") - 1
    ops = client_as("ops").get("/ledger/").content.decode()
    assert _waiting(ops, "holds") == int(ops.split('id="open-holds">')[1].split("<")[0])
    assert _waiting(ops, "quarantine") == 0 and 'id="waiting-runs"' not in ops
    admin = client_as("admin").get("/ledger/").content.decode()
    assert _waiting(admin, "staff-changes") == sum(
        1 for change in ledger.read(lambda view: staff_queries.changes(view, "pending"))
        if change["requested_by"] != STAFF["admin"])
    assert 'id="waiting' not in client_as("auditor").get("/ledger/").content.decode()
