"""Dashboard: head, conservation status, what waits for someone, and daily money charts."""

from __future__ import annotations

import re

from ledger_engine.layout import INDEXES
from tests.console.test_payouts import prepare
from tests.money_allocation.world import FINANCE


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
    assert page.count('<svg role="img"') == 1 and "Allocated per day" in page
    assert "Reserved: nothing yet." in page and "Paid: nothing yet." in page
    assert re.search(r"<rect [^>]+><title>\d\d \w{3}: [\d,]+\.\d{6} USDC</title></rect>", page)
