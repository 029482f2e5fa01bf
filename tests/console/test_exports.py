"""CSV exports of the list screens: what the filters select, every page, streamed, in columns people read."""

from __future__ import annotations

import csv
import hashlib
import io
import re
from datetime import UTC, datetime

import pytest
from django.http import StreamingHttpResponse

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.invariants import FUNDING_TERMS, HOLDING_TERMS
from ledger_engine.selectors import accounting as selectors
from ledger_engine.selectors import listing_queries, payout_queries
from porto_console.console import exports
from porto_console.console.commands import new_command_id
from porto_console.console.services import payouts as payout_service
from porto_console.console.services import budgets as budget_service
from porto_console.console.services import journal as journal_service
from porto_console.console.views.budgets import _budgets
from porto_console.console.views.holds import HOLD_LISTING
from porto_console.console.views.payouts import RUN_LISTING
from tests.console.test_payouts import a_signed_payment
from tests.money_allocation.world import FINANCE

ISO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$")


def table(response) -> list[dict[str, str]]:
    assert isinstance(response, StreamingHttpResponse) and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))


def header(response) -> list[str]:
    return next(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


def iso(at_ms: int) -> str:
    return exports.iso_time(at_ms)


def day(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).date().isoformat()


# The cells: injection, times, amounts without floats.

@pytest.mark.parametrize("hostile", ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"])
def test_a_text_cell_a_spreadsheet_would_run_is_quoted(hostile):
    assert exports.safe(hostile) == "'" + hostile
    assert exports.safe("artist-a") == "artist-a"


def test_amounts_are_numbers_never_quoted_and_never_floats():
    assert exports.money(1, "USDC") == ("0.000001", "1")
    assert exports.money("123456789012345678", "USDC") == ("123456789012.345678", "123456789012345678")
    assert exports.safe(exports.decimal(-1, "USDC")) == "-0.000001"  # a signed amount stays a number
    assert exports.money(None, "USDC") == ("", "")


def test_times_are_iso_utc_and_days_utc_dates():
    assert exports.iso_time(1_796_047_500_000) == "2026-11-30T14:05:00Z"
    assert exports.iso_time(1_796_047_500_250) == "2026-11-30T14:05:00.250Z"
    assert exports.iso_day(20_787) == "2026-11-30"


def test_the_filename_says_which_days_it_holds():
    from datetime import date
    assert exports.filename("payments", date(2026, 11, 1), date(2026, 11, 30)) == \
        "porto-payments-2026-11-01-to-2026-11-30.csv"
    assert exports.filename("holds") == "porto-holds-all-dates.csv"
    assert exports.filename("holds", date(2026, 11, 1)) == "porto-holds-from-2026-11-01.csv"


# Payments, runs and payables, on the payout world.

@pytest.fixture
def paid_world(finance, payouts_world):
    """One approved run, its first payment signed."""
    run_id, _ = a_signed_payment(finance, payouts_world)
    return run_id


def test_the_payments_export_holds_every_payment_the_filters_select_as_the_ledger_records_it(finance, payouts_world,
                                                                                            paid_world):
    response = finance[FINANCE].get("/ledger/payouts/payments/", {"state": "all", "format": "csv"})
    rows = table(response)
    run = payouts_world.state(f"payment_run/{paid_world}")
    assert sorted(row["payment_id"] for row in rows) == sorted(p["payment_id"] for p in run["frozen"]["payments"])
    for row in rows:
        payment = payouts_world.state(f"payment/{row['payment_id']}")
        minor = parse_amount(payment["amount"])
        assert row["amount_minor_units"] == str(minor) and row["asset"] == payment["asset"] == "USDC"
        assert row["amount"] == f"{minor // 10**6}.{minor % 10**6:06d}"
        assert row["recipient_id"] == payment["recipient_id"] and row["run_id"] == paid_world
        assert row["prepared_at"] == iso(payment["created"]["at_ms"]) and ISO_TIME.match(row["prepared_at"])
    signed = [row for row in rows if row["state"] == "Signed"]
    assert len(signed) == 1 and signed[0]["transaction_hash"] == payouts_world.state(
        "payment_attempt/attempt-1")["transaction_hash"]
    assert response["Content-Disposition"] == 'attachment; filename="porto-payments-all-dates.csv"'


def test_the_payments_export_selects_what_the_screen_selects_on_every_page(finance, payouts_world, paid_world):
    recipient = payouts_world.state(f"payment_run/{paid_world}")["frozen"]["payments"][1]["recipient_id"]
    rows = table(finance[FINANCE].get("/ledger/payouts/payments/", {"state": "approved", "recipient": recipient,
                                                                     "format": "csv", "page": "2"}))
    assert [row["recipient_id"] for row in rows] == [recipient] and rows[0]["state"] == "Approved"
    prepared = payouts_world.state(f"payment/{rows[0]['payment_id']}")["created"]["at_ms"]
    on_the_day = {"state": "all", "prepared_from": day(prepared), "prepared_to": day(prepared), "format": "csv"}
    response = finance[FINANCE].get("/ledger/payouts/payments/", on_the_day)
    assert response["Content-Disposition"] == (f'attachment; filename="porto-payments-{day(prepared)}-to-'
                                               f'{day(prepared)}.csv"')
    assert len(table(response)) == len(payouts_world.state(f"payment_run/{paid_world}")["frozen"]["payments"])
    later = {**on_the_day, "prepared_from": "2999-01-01", "prepared_to": "2999-01-02"}
    assert table(finance[FINANCE].get("/ledger/payouts/payments/", later)) == []


def test_the_runs_export_lists_the_runs_with_their_totals(finance, payouts_world, paid_world):
    response = finance[FINANCE].get("/ledger/payouts/", {"status": "all", "format": "csv"})
    rows = table(response)
    listed = payouts_world.owner.read(lambda view: list(payout_service.runs_in(view, "all")))
    assert [row["run_id"] for row in rows] == [run.run_id for run in RUN_LISTING.apply(listed, RUN_LISTING.default_query())]
    row = next(row for row in rows if row["run_id"] == paid_world)
    run = payouts_world.state(f"payment_run/{paid_world}")
    total = sum(parse_amount(p["amount"]) for p in run["frozen"]["payments"])
    assert row["total_minor_units"] == str(total) and row["status"] == "Approved" and row["asset"] == "USDC"
    assert row["payments"] == str(len(run["frozen"]["payments"])) and row["prepared_by"] == FINANCE
    assert ISO_TIME.match(row["prepared_at"])


def test_the_payables_export_is_what_each_recipient_is_owed_now(finance, payouts_world):
    response = finance[FINANCE].get("/ledger/payouts/prepare/", {"format": "csv"})
    rows = table(response)
    payables = payouts_world.owner.read(payout_queries.payables)
    assert [(row["recipient_id"], row["amount_minor_units"], row["line_ids"]) for row in rows] == [
        (p.recipient_id, str(p.amount), " ".join(p.line_ids)) for p in payables]
    assert response["Content-Disposition"].endswith(
        f'porto-payables-at-sequence-{payouts_world.owner.head().sequence}.csv"')


def test_payables_per_recipient_export_matches_the_screen(finance, payouts_world):
    rows = table(finance[FINANCE].get("/ledger/budgets/payables/", {"format": "csv"}))
    balances = payouts_world.owner.read(budget_service.recipient_balances)
    assert [(r["recipient_id"], r["payable_minor_units"], r["reserved_minor_units"], r["paid_minor_units"])
            for r in rows] == [(b["recipient_id"], b["payable"], b["reserved"], b["paid"]) for b in balances]


def test_a_hostile_recipient_id_is_neutralised(finance, payouts_world, monkeypatch):
    from ledger_engine.selectors import payout_queries
    real = payout_queries.payables

    def hostile(view):
        return [type(p)(**{**p.__dict__, "recipient_id": "=cmd|' /C calc'!A0"}) for p in real(view)]

    monkeypatch.setattr(payout_queries, "payables", hostile)
    rows = table(finance[FINANCE].get("/ledger/payouts/prepare/", {"format": "csv"}))
    assert rows and all(row["recipient_id"] == "'=cmd|' /C calc'!A0" for row in rows)


def test_exports_stream_no_command_and_change_nothing(finance, payouts_world, paid_world):
    head = payouts_world.owner.head()
    for url in ("/ledger/payouts/payments/", "/ledger/payouts/", "/ledger/payouts/prepare/", "/ledger/budgets/",
                "/ledger/budgets/payables/"):
        assert isinstance(finance[FINANCE].get(url, {"format": "csv"}), StreamingHttpResponse)
    assert payouts_world.owner.head() == head


# Budgets, holds and the journal, on the demo ledger.

def test_the_budgets_export_holds_each_equation_and_selects_by_period(client_as, ledger):
    client = client_as("finance")
    response = client.get("/ledger/budgets/", {"format": "csv"})
    assert header(client.get("/ledger/budgets/", {"format": "csv"})) == list(
        exports.budget_header(FUNDING_TERMS, HOLDING_TERMS))
    rows = table(response)
    budgets = ledger.read(lambda view: {b["budget_id"]: b for b in budget_service.budgets(view)})
    assert rows and sorted(row["budget_id"] for row in rows) == sorted(budgets)
    for row in rows:
        budget = budgets[row["budget_id"]]
        for term in (*FUNDING_TERMS, *HOLDING_TERMS, "funding_total", "holding_total"):
            assert row[f"{term}_minor_units"] == budget.get(term, "0")
        assert row["balanced"] == ("balanced" if budget["balanced"] else "not balanced")
    first = rows[0]["period_first_day"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", first)
    on_that_day = table(client.get("/ledger/budgets/", {"period_from": first, "period_to": first, "format": "csv"}))
    assert {row["budget_id"] for row in on_that_day} == {row["budget_id"] for row in rows
                                                         if row["period_first_day"] == first}
    screen = client.get("/ledger/budgets/", {"period_from": first, "period_to": first}).content.decode()
    assert all(row["budget_id"] in screen for row in on_that_day)


def test_the_holds_export_is_the_open_queue_the_filters_select(client_as, ledger):
    client = client_as("ops")
    rows = table(client.get("/ledger/holds/", {"format": "csv"}))
    expected = ledger.read(lambda view: HOLD_LISTING.apply(listing_queries.every_open_hold(view),
                                                           HOLD_LISTING.default_query()))
    assert [row["hold_id"] for row in rows] == [hold["hold_id"] for hold in expected]
    assert [row["raised_at"] for row in rows] == [iso(hold["raised_at_ms"]) for hold in expected]
    assert expected, "the demo ledger has open holds"
    hold = expected[0]
    raised = day(hold["raised_at_ms"])
    same_day = table(client.get("/ledger/holds/", {"raised_from": raised, "raised_to": raised,
                                                   "listener": hold["listener_id"], "format": "csv"}))
    assert hold["hold_id"] in [row["hold_id"] for row in same_day]
    assert all(row["listener_id"] == hold["listener_id"] for row in same_day)


def journal_export(client, **filters):
    return client.post("/ledger/journal/export-csv/", {"command_id": new_command_id(), **filters})


def test_the_journal_export_holds_each_entry_with_the_amounts_and_recipients_it_moved(client_as, ledger):
    head = ledger.head().sequence
    response = journal_export(client_as("auditor"))
    rows = table(response)
    assert header(journal_export(client_as("auditor"))) == list(exports.JOURNAL_HEADER)
    assert sorted({int(row["sequence"]) for row in rows}) == list(range(1, head + 1))  # every entry up to then
    money_rows = [row for row in rows if row["amount_minor_units"]]
    assert money_rows
    for row in money_rows[:200]:
        postings = selectors.entry_postings(ledger.view(), int(row["sequence"]))
        assert any(p.account == row["account"] and str(p.amount) == row["amount_minor_units"] and p.side == row["side"]
                   for p in postings)
        if row["account"].startswith(("artist_payable:", "reserved_payouts:")):
            assert row["recipient_id"] == row["account"].split(":", 1)[1]
    entry = ledger.journal_entry(1)
    first = next(row for row in rows if row["sequence"] == "1")
    summary = journal_service.summary(entry)
    assert {name: first[name] for name in journal_service.CSV_COLUMNS} == {
        name: str(value) for name, value in summary.items()} | {"outcome": first["outcome"]}
    assert first["admitted_at"] == iso(summary["admitted_at_ms"]) and first["outcome"] == "Accepted"


def test_the_journal_export_is_recorded_in_the_ledger_first_with_the_file_digest(client_as, ledger):
    head = ledger.head().sequence
    response = journal_export(client_as("auditor"), command_type="AllocateListenerDay")
    content = b"".join(response.streaming_content)
    recorded = ledger.journal_entry(head + 1)
    assert recorded["envelope"]["command_type"] == "RecordExportAccess"
    assert recorded["envelope"]["payload"]["content_sha256"] == hashlib.sha256(content).hexdigest()
    assert recorded["envelope"]["payload"]["file_format"] == "csv"
    rows = list(csv.DictReader(io.StringIO(content.decode())))
    assert rows and {row["command_type"] for row in rows} == {"AllocateListenerDay"}


def test_the_journal_export_selects_the_admitted_days_and_names_them(client_as, ledger):
    admitted = ledger.journal_entry(1)["envelope"]["admitted_at_ms"]
    response = journal_export(client_as("auditor"), admitted_from=day(admitted), admitted_to=day(admitted))
    assert response["Content-Disposition"].endswith(f'porto-journal-{day(admitted)}-to-{day(admitted)}.csv"')
    assert {day(int(row["admitted_at_ms"])) for row in table(response)} == {day(admitted)}


def test_a_journal_export_by_admin_records_nothing_and_hands_out_nothing(client_as, ledger):
    head = ledger.head()
    response = journal_export(client_as("admin"))
    assert response.status_code == 403 and not isinstance(response, StreamingHttpResponse)
    assert ledger.head() == head


@pytest.mark.parametrize(("role", "url"), [("ops", "/ledger/payouts/payments/"), ("ops", "/ledger/budgets/"),
                                           ("finance", "/ledger/holds/"), ("auditor", "/ledger/payouts/prepare/"),
                                           ("finance", "/ledger/journal/")])
def test_an_export_needs_its_screens_role(client_as, ledger, role, url):
    assert client_as(role).get(url, {"format": "csv"}).status_code == 403


def test_every_list_screen_links_its_export(client_as, ledger):
    for role, url in (("finance", "/ledger/payouts/payments/?state=all&recipient=a"), ("finance", "/ledger/payouts/"),
                      ("finance", "/ledger/budgets/"), ("finance", "/ledger/budgets/payables/"),
                      ("ops", "/ledger/holds/"), ("finance", "/ledger/payouts/prepare/")):
        page = client_as(role).get(url).content.decode()
        assert "Export CSV" in page and "format=csv" in page, url
    payments = client_as("finance").get("/ledger/payouts/payments/?state=all&recipient=a").content.decode()
    assert "recipient=a" in re.search(r'href="([^"]*format=csv[^"]*)"', payments).group(1)
    journal = client_as("auditor").get("/ledger/journal/?actor=x").content.decode()
    assert "/ledger/journal/export-csv/" in journal and 'name="actor" value="x"' in journal
