"""Accounting screens on the demo ledger: postings per entry, links both ways, statements, trial balance, CSV,
raw minor units, and the full conservation check on demand."""

from __future__ import annotations

import csv
import io
import re

import pytest

from ledger_engine.selectors import accounting
from porto_console.console.handles import seal
from porto_console.console.services.accounting import formatted


def _first_entry(ledger, command_type: str) -> int:
    for sequence in range(1, ledger.head().sequence + 1):
        entry = ledger.journal_entry(sequence)
        if entry["envelope"]["command_type"] == command_type and entry["outcome"] == "accepted":
            return sequence
    raise AssertionError(f"no accepted {command_type} in the demo")


def _csv_rows(response) -> list[dict]:
    assert response["Content-Type"] == "text/csv"
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_an_approval_entry_shows_its_postings_as_debits_and_credits_and_links_its_run(client_as, ledger):
    sequence = _first_entry(ledger, "ApprovePayoutRun")
    auditor = client_as("auditor")
    page = auditor.get(f"/ledger/journal/{sequence}/").content.decode()
    table = page.split('id="postings"')[1].split("</table>")[0]
    postings = accounting.entry_postings(ledger.store, sequence)
    assert table.count("<tr>") == len(postings) + 1
    first = postings[0]
    assert formatted(first.amount, first.asset) in table
    run_id = ledger.journal_entry(sequence)["envelope"]["payload"]["run_id"]
    assert f'/ledger/payouts/{seal("run", run_id)}/' in page
    history = auditor.get(f"/ledger/accounting/history/run/{seal('run', run_id)}/").content.decode()
    assert f'href="/ledger/journal/{sequence}/"' in history


def test_the_postings_csv_has_integer_minor_units_and_a_formatted_column(client_as, ledger):
    sequence = _first_entry(ledger, "ApprovePayoutRun")
    rows = _csv_rows(client_as("auditor").get(f"/ledger/journal/{sequence}/", {"format": "csv"}))
    postings = accounting.entry_postings(ledger.store, sequence)
    assert [int(row["debit_minor"]) + int(row["credit_minor"]) for row in rows] == [p.amount for p in postings]
    assert all("." not in row["debit_minor"] and row["debit"].endswith(row["asset"]) for row in rows)
    assert sum(int(row["debit_minor"]) for row in rows) == sum(int(row["credit_minor"]) for row in rows)


def test_the_raw_toggle_shows_minor_units(client_as, ledger):
    sequence = _first_entry(ledger, "ApprovePayoutRun")
    amount = accounting.entry_postings(ledger.store, sequence)[0].amount
    auditor = client_as("auditor")
    assert f'<span class="money raw" title="{formatted(amount, "USDC")}">{amount}</span>' in auditor.get(
        f"/ledger/journal/{sequence}/", {"raw": "1"}).content.decode()
    assert f'title="{amount} minor units"' in auditor.get(f"/ledger/journal/{sequence}/", {"raw": "0"}).content.decode()


@pytest.mark.parametrize("role", ["finance", "auditor"])
def test_the_trial_balance_balances_each_asset_and_exports(client_as, ledger, role):
    client = client_as(role)
    page = client.get("/ledger/accounting/trial-balance/").content.decode()
    assert f'id="trial-sequence">{ledger.head().sequence}<' in page
    assert 'id="total-USDC"' in page and "balanced" in page
    rows = _csv_rows(client.get("/ledger/accounting/trial-balance/", {"format": "csv"}))
    usdc = [row for row in rows if row["asset"] == "USDC" and row["account"] != "total"]
    assert sum(int(row["debits_minor"]) for row in usdc) == sum(int(row["credits_minor"]) for row in usdc) > 0
    early = client.get("/ledger/accounting/trial-balance/", {"sequence": "3"}).content.decode()
    assert 'id="trial-sequence">3<' in early


def test_a_recipients_statement_runs_its_balance_to_what_they_are_owed(client_as, ledger):
    recipient = ledger.journal_entry(_first_entry(ledger, "ApprovePayoutRun"))
    statement_accounts = {p.account for p in accounting.entry_postings(ledger.store, recipient["sequence"])}
    recipient_id = sorted(statement_accounts)[0].split(":", 1)[1]
    finance = client_as("finance")
    page = finance.get("/ledger/accounting/statement/", {"recipient": recipient_id, "asset": "USDC"}).content.decode()
    whole = accounting.account_statement(ledger.store, accounting.recipient_accounts(recipient_id), "USDC",
                                         from_ms=0, to_ms=2**62)
    assert whole.rows
    closing = page.split('id="closing">')[1].split("</td>")[0]
    assert formatted(whole.closing, "USDC") in closing
    rows = _csv_rows(finance.get("/ledger/accounting/statement/", {"recipient": recipient_id, "asset": "USDC",
                                                                   "format": "csv"}))
    assert [int(row["balance_minor"]) for row in rows[1:]] == [row.balance for row in whole.rows]
    refused = finance.get("/ledger/accounting/statement/", {"recipient": recipient_id, "first": "2030-01-02",
                                                            "last": "2030-01-01"}).content.decode()
    assert "The first day comes after the last." in refused


def test_a_posting_accounts_statement_over_a_date_range(client_as, ledger):
    page = client_as("auditor").get("/ledger/accounting/statement/", {
        "account": "treasury", "asset": "USDC", "first": "1970-01-01", "last": "1970-01-02"}).content.decode()
    assert "No postings in that range." in page
    assert re.search(r'id="opening">.*0\.000000 USDC', page)


@pytest.mark.parametrize("role", ["ops", "auditor"])
def test_ops_and_auditors_run_the_full_conservation_check_from_the_dashboard(client_as, ledger, role):
    client = client_as(role)
    page = client.get("/ledger/").content.decode()
    command_id = re.search(r'id="conservation-check".*?name="command_id" value="([^"]+)"', page, re.S).group(1)
    head = ledger.head().sequence
    response = client.post("/ledger/accounting/conservation-check/", {"command_id": command_id}, follow=True)
    entry = ledger.journal_entry(head + 1)
    assert (entry["envelope"]["command_type"], entry["outcome"]) == ("CheckConservation", "accepted")
    assert f"last full check at sequence {head + 1}" in response.content.decode()


def test_admin_is_offered_no_conservation_check(client_as, ledger):
    admin = client_as("admin")
    assert 'id="conservation-check"' not in admin.get("/ledger/").content.decode()
    head = ledger.head()
    assert admin.post("/ledger/accounting/conservation-check/", {"command_id": "x"}).status_code == 403
    assert ledger.head() == head


@pytest.mark.parametrize(("kind", "prefix", "handle_kind", "screen"), [
    ("correction", "correction_request/", "correction", "/ledger/corrections/"),
    ("staff_change", "staff_change/", "staff-change", "/ledger/staff-changes/")])
def test_corrections_and_staff_changes_link_to_their_journal_entries_and_back(client_as, ledger, kind, prefix,
                                                                             handle_kind, screen):
    record_id = ledger.scan("state", prefix, limit=1)[0][0].split("/", 1)[1]
    handle = seal(handle_kind, record_id)
    auditor = client_as("auditor")
    record_page = auditor.get(f"{screen}{handle}/").content.decode()
    assert f'href="/ledger/accounting/history/{kind}/{handle}/"' in record_page
    history = auditor.get(f"/ledger/accounting/history/{kind}/{handle}/").content.decode()
    sequences = [int(found) for found in re.findall(r'href="/ledger/journal/(\d+)/"', history)]
    assert sequences
    entry = auditor.get(f"/ledger/journal/{sequences[0]}/").content.decode()
    assert f'href="{screen}{handle}/"' in entry
