"""The Payments list: its columns, search by recipient, payment, run, transaction hash and prepared dates,
sortable columns whose links keep the search, and a reversed date range refused with its reason."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

from ledger_engine.layout import STATE

PAYMENTS = "/ledger/payouts/payments/"


def listed(page: str) -> list[dict[str, str]]:
    """The Payments table's rows: payment ID, state, recipient, amount, transaction hash (from the hover titles)."""
    body = re.search(r'<table class="console-table" id="payments".*?<tbody>(.*?)</tbody>', page, re.DOTALL).group(1)
    found = []
    for row in re.findall(r"<tr>(.*?)</tr>", body, re.DOTALL):
        if "No payments match" in row:
            continue
        titles = re.findall(r'title="([^"]+)"', row)
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
        found.append({"payment_id": titles[0], "state": re.search(r'class="enum" title="(\w+)"', row).group(1),
                      "recipient_id": re.search(r'<code class="record-id">([^<]+)</code>', cells[3]).group(1), "amount": re.sub(r"<[^>]+>", "", cells[4]), "transaction_hash": titles[-1] if "0x" in titles[-1] else ""})
    return found


def payments(ledger) -> list[dict]:
    return [value["data"] for _, value in ledger.scan(STATE, "payment/", limit=10_000)]


def transaction_hash(ledger, payment: dict) -> str:
    return ledger.get(STATE, f"payment_attempt/{payment['attempt_ids'][-1]}").data["transaction_hash"]


def test_the_list_shows_state_dates_address_version_and_transaction_hash(client_as, ledger):
    page = client_as("finance").get(PAYMENTS, {"state": "confirmed"}).content.decode()
    confirmed = [payment for payment in payments(ledger) if payment["state"] == "confirmed"]
    rows = listed(page)
    assert {row["payment_id"] for row in rows} == {payment["payment_id"] for payment in confirmed} != set()
    for header in ("State", "Address (version)", "Prepared", "Paid", "Transaction"):
        assert f">{header}<" in page
    first = confirmed[0]
    assert f'title="{first["payout_address"]}"' in page and f'(v{first["recipient_version"]})' in page
    assert f'title="{transaction_hash(ledger, first)}"' in page
    prepared = datetime.fromtimestamp(first["created"]["at_ms"] / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    assert prepared in page


def test_search_by_recipient_payment_run_and_transaction_hash_across_states(client_as, ledger):
    client = client_as("finance")
    every = payments(ledger)
    target = next(payment for payment in every if payment["state"] == "confirmed")
    by_recipient = listed(client.get(PAYMENTS, {"state": "all", "recipient": target["recipient_id"][-4:]}).content.decode())
    assert {row["payment_id"] for row in by_recipient} == {
        payment["payment_id"] for payment in every if target["recipient_id"][-4:] in payment["recipient_id"]}
    for field, value in (("payment", target["payment_id"][:13]), ("run", target["run_id"]),
                         ("transaction_hash", transaction_hash(ledger, target)[:20].upper())):
        rows = listed(client.get(PAYMENTS, {"state": "all", field: value}).content.decode())
        assert target["payment_id"] in {row["payment_id"] for row in rows}, field
        if field != "run":
            assert len(rows) == 1, field
    nothing = client.get(PAYMENTS, {"state": "all", "transaction_hash": "0xnotahash"}).content.decode()
    assert listed(nothing) == [] and "No payments match." in nothing


def test_a_prepared_date_range_keeps_only_the_payments_prepared_in_it(client_as, ledger):
    client = client_as("finance")
    every = payments(ledger)
    days = sorted({datetime.fromtimestamp(p["created"]["at_ms"] / 1000, UTC).date() for p in every})
    inside = listed(client.get(PAYMENTS, {"state": "all", "prepared_from": days[0].isoformat(),
                                          "prepared_to": days[-1].isoformat()}).content.decode())
    assert len(inside) == len(every)
    after = listed(client.get(PAYMENTS, {"state": "all", "prepared_from": "2099-01-01"}).content.decode())
    assert after == []


def test_a_reversed_date_range_is_refused_with_its_reason_and_the_default_list_shown(client_as, ledger):
    page = client_as("finance").get(PAYMENTS, {"state": "all", "prepared_from": "2026-10-05",
                                                "prepared_to": "2026-10-01"}).content.decode()
    assert "The range starts after it ends." in page
    assert {row["state"] for row in listed(page)} <= {"approved"}


def minor_units(shown: str) -> int:
    """``1,234.567890 USDC`` -> 1234567890."""
    return int(shown.split()[0].replace(",", "").replace(".", ""))


def test_sorting_by_amount_both_ways_and_the_sort_links_keep_the_search(client_as, ledger):
    client = client_as("finance")
    search = {"state": "all", "recipient": "demo-"}
    page = client.get(PAYMENTS, {**search, "sort": "amount", "dir": "asc"}).content.decode()
    ascending = [minor_units(row["amount"]) for row in listed(page)]
    assert len(ascending) > 2 and ascending == sorted(ascending) and ascending != ascending[::-1]
    descending = [minor_units(row["amount"])
                  for row in listed(client.get(PAYMENTS, {**search, "sort": "amount", "dir": "desc"}).content.decode())]
    assert descending == sorted(ascending, reverse=True)
    amount_header = re.search(r'<th scope="col" aria-sort="ascending"><a href="\?([^"]+)"', page).group(1)
    assert "recipient=demo-" in html.unescape(amount_header) and "dir=desc" in html.unescape(amount_header)
    recipient_header = re.search(r'<a href="\?([^"]+)" class="sort-link">Recipient</a>', page).group(1)
    assert "state=all" in html.unescape(recipient_header) and "sort=recipient" in html.unescape(recipient_header)


def test_an_unknown_sort_column_is_refused_and_the_default_list_shown(client_as, ledger):
    page = client_as("finance").get(PAYMENTS, {"state": "all", "sort": "payout_address"}).content.decode()
    assert {row["state"] for row in listed(page)} <= {"approved"}


def test_the_next_page_keeps_the_search_and_the_sort(client_as, ledger, monkeypatch):
    from porto_console.console import paging
    from porto_console.console.views import payouts as payout_views

    monkeypatch.setattr(payout_views, "paginate", lambda rows, number: paging.paginate(rows, number, size=2))
    client = client_as("finance")
    search = {"state": "all", "recipient": "demo-artist", "sort": "amount", "dir": "asc"}
    first = client.get(PAYMENTS, search).content.decode()
    next_link = html.unescape(re.search(r'<a href="\?([^"]+)">next ›</a>', first).group(1))
    assert all(f"{name}={value}" in next_link for name, value in search.items()) and "page=2" in next_link
    second = client.get(f"{PAYMENTS}?{next_link}").content.decode()
    shown = [*listed(first), *listed(second)]
    assert len(shown) == 4 and all(row["recipient_id"].startswith("demo-artist") for row in shown)
    amounts = [minor_units(row["amount"]) for row in shown]
    assert amounts == sorted(amounts)
