"""Holds by money, on the demo ledger: each open hold shows what its listener-day waits to allocate, the queue sorts
by it, the hold's own page and the CSV export carry it. The amounts are held to the budgets as the ledger records
them (each budget's own slice for the day, found by scanning budgets, not through the index the screens read)."""

from __future__ import annotations

import csv
import io
import re

from django.test import Client

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.commands.money.budgets import slice_for_day
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from porto_console.console.handles import seal
from porto_console.console.templatetags.console import formatted
from porto_console.ledger import owner


def expected_stakes() -> dict[str, int | None]:
    """Each open hold's stake: the slice, for its day, of the budget funding the listener's period covering it."""
    view = owner().view()
    periods = [record.data for _, record in view.records("period/")]
    budgets = {record.data["period_id"]: record.data for _, record in view.records("budget/")}
    stakes = {}
    for _, record in view.records("hold/"):
        hold = record.data
        if hold["status"] != "open":
            continue
        covering = [period["period_id"] for period in periods if period["account_id"] == hold["listener_id"]
                    and period["start_ms"] <= hold["day"] * DAY_MS < period["end_ms"]]
        budget = budgets.get(covering[0]) if covering else None
        stakes[hold["hold_id"]] = None if budget is None else slice_for_day(budget, hold["day"])
    return stakes


def listed_ids(page: str) -> list[str]:
    return re.findall(r'href="/ledger/holds/([^/"]+)/"', page)


def test_the_queue_shows_each_holds_stake_and_sorts_by_it_largest_first(client_as, ledger):
    ops: Client = client_as("ops")
    stakes = expected_stakes()
    assert any(stake for stake in stakes.values()), "the demo's holds wait on funded listener-days"

    page = ops.get("/ledger/holds/", {"sort": "stake"}).content.decode()
    shown = listed_ids(page)
    by_handle = {seal("hold", hold_id): stake for hold_id, stake in stakes.items()}
    assert [by_handle[handle] or 0 for handle in shown] == sorted((by_handle[handle] or 0 for handle in shown),
                                                                  reverse=True)
    first = next(stake for stake in stakes.values() if stake)
    assert formatted(first, "USDC") in page
    ascending = listed_ids(ops.get("/ledger/holds/", {"sort": "stake", "dir": "asc"}).content.decode())
    assert [by_handle[handle] or 0 for handle in ascending] == sorted(by_handle[handle] or 0 for handle in ascending)


def test_a_holds_page_says_what_is_at_stake(client_as, ledger):
    hold_id, stake = next((hold_id, stake) for hold_id, stake in expected_stakes().items() if stake)
    page = client_as("ops").get(f"/ledger/holds/{seal('hold', hold_id)}/").content.decode()
    cell = page.split('id="hold-stake"')[1].split("</td>")[0]
    assert formatted(stake, "USDC") in cell and "once its holds are decided" in cell


def test_the_holds_export_carries_each_stake_in_usdc_and_minor_units(client_as, ledger):
    response = client_as("ops").get("/ledger/holds/", {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    stakes = expected_stakes()
    assert rows and {row["hold_id"] for row in rows} == set(stakes)
    for row in rows:
        stake = stakes[row["hold_id"]]
        assert row["at_stake_minor_units"] == ("" if stake is None else str(stake))
        if stake is not None:
            assert parse_amount(row["at_stake_minor_units"]) == stake and row["asset"] == "USDC"
