"""The dashboard's money: what the chain confirmed paid per day in a period and in the period before, the money
runs and holds wait on, and the period presets; every figure an integer of minor units, held to the payments, runs
and budgets the ledger records."""

from __future__ import annotations

import re
from datetime import date

from ledger_engine.amounts import parse_amount
from ledger_engine.domain.commands.money.payments import payment_key
from ledger_engine.layout import STATE
from porto_console.console.charts import day_label
from porto_console.console.services import dashboard_money
from porto_console.console.services.dashboard_money import last_14_days, last_month, this_month, this_week
from tests.console.test_dashboard import chart_data
from tests.console.test_holds_by_money import expected_stakes
from tests.money_allocation.world import FINANCE, FIRST_DAY

DAY_MS = 86_400_000
NOON_MS = 12 * 3_600_000
PAID_FIRST = FIRST_DAY + 40  # 10 Nov 2026: after everything the world set up


def minor_units(page: str, element_id: str) -> int:
    """The integer minor units an amount on the page stands for (on hover)."""
    return int(re.search(rf'id="{element_id}">[^<]*<span class="money" title="(\d+) minor units">', page).group(1))


def amount(world, payment_id: str) -> int:
    return parse_amount(world.state(payment_key(payment_id))["amount"])


def pay_on(world, day: int, recipient: str) -> int:
    """Pay run-1's payment to ``recipient`` at noon (UTC) on ``day``; its amount."""
    world.now_ms = day * DAY_MS + NOON_MS
    world.pay(f"run-1.{recipient}", f"attempt-{recipient}")
    return amount(world, f"run-1.{recipient}")


def approved_run(world, recipients: tuple[str, ...]) -> None:
    plan = {recipient: world.payable_line_ids(recipient) for recipient in recipients}
    assert world.prepare("run-1", plan).accepted
    assert world.approve("run-1", world.confirmed_statements(plan)).accepted


def dashboard_on(client, monkeypatch, day: int, period: str = "") -> str:
    monkeypatch.setattr(dashboard_money, "now_ms", lambda: day * DAY_MS + NOON_MS)
    return client.get("/ledger/", {"period": period} if period else {}).content.decode()


def test_paid_this_period_per_day_and_against_the_period_before(finance, payouts_world, monkeypatch):
    approved_run(payouts_world, ("artist-a", "artist-b", "artist-c"))
    paid = {PAID_FIRST: pay_on(payouts_world, PAID_FIRST, "artist-a"),
            PAID_FIRST + 1: pay_on(payouts_world, PAID_FIRST + 1, "artist-b"),
            PAID_FIRST + 3: pay_on(payouts_world, PAID_FIRST + 3, "artist-c")}
    assert all(paid.values()) and len(set(paid.values())) == 3

    today = PAID_FIRST + 14  # the last 14 days start the day after the first payment
    page = dashboard_on(finance[FINANCE], monkeypatch, today)
    in_period = paid[PAID_FIRST + 1] + paid[PAID_FIRST + 3]
    assert minor_units(page, "paid-total") == in_period
    assert minor_units(page, "paid-before") == paid[PAID_FIRST]
    change = in_period - paid[PAID_FIRST]
    direction = "up" if change > 0 else "down"
    assert f'id="paid-change">{direction} <span class="money" title="{abs(change)} minor units">' in page
    chart = chart_data(page, "chart-paid")
    assert chart["labels"] == [day_label(day) for day in range(today - 13, today + 1)] and chart["unit"] == "USDC"
    assert chart["series"][0]["values"] == [paid.get(day, 0) if day > PAID_FIRST else 0
                                            for day in range(today - 13, today + 1)]


def test_a_preset_chooses_the_period_and_marks_itself_chosen(finance, payouts_world, monkeypatch):
    approved_run(payouts_world, ("artist-a", "artist-b"))
    paid = pay_on(payouts_world, PAID_FIRST, "artist-a") + pay_on(payouts_world, PAID_FIRST + 2, "artist-b")
    december_5 = (date(2026, 12, 5) - date(1970, 1, 1)).days
    page = dashboard_on(finance[FINANCE], monkeypatch, december_5, "last-month")
    assert minor_units(page, "paid-total") == paid and minor_units(page, "paid-before") == 0
    assert "from 1 Nov 2026 to 30 Nov 2026 (UTC)" in page and "in the month before (1 Oct to 31 Oct 2026)" in page
    assert '<strong aria-current="true">Last month</strong>' in page and 'href="?period=last-14-days"' in page
    assert len(chart_data(page, "chart-paid")["labels"]) == 30
    unknown = dashboard_on(finance[FINANCE], monkeypatch, december_5, "fortnight")  # the default period instead
    assert '<strong aria-current="true">Last 14 days</strong>' in unknown


def runs_card(page: str) -> str:
    return page.split('id="runs-awaiting-total"')[1].split("</p>")[0]


def test_the_runs_waiting_show_what_they_would_pay_and_what_is_left_to_cancel(finance, payouts_world, monkeypatch):
    lines = {recipient: payouts_world.payable_line_ids(recipient) for recipient in ("artist-a", "artist-b")}
    assert payouts_world.prepare("run-1", lines).accepted
    waiting = amount(payouts_world, "run-1.artist-a") + amount(payouts_world, "run-1.artist-b")
    page = finance[FINANCE].get("/ledger/").content.decode()
    assert minor_units(page, "runs-awaiting-total") == waiting and "in runs to cancel" not in runs_card(page)

    assert payouts_world.prepare("run-2", {"artist-a": lines["artist-a"]}).accepted
    assert payouts_world.approve("run-2", payouts_world.confirmed_statements(["artist-a"])).accepted
    page = finance[FINANCE].get("/ledger/").content.decode()  # run-1 can never be approved now: it is to cancel
    assert minor_units(page, "runs-awaiting-total") == 0
    assert re.search(rf'; <span class="money" title="{waiting} minor units">[^<]*</span> in runs to cancel$', runs_card(page))


def test_the_open_holds_show_what_their_listener_days_wait_to_allocate_each_day_once(client_as, ledger):
    listener_days = {key.split("/", 1)[1]: (hold["data"]["listener_id"], hold["data"]["day"])
                     for key, hold in ledger.scan(STATE, "hold/", limit=10_000)}
    stakes = {listener_days[hold_id]: stake for hold_id, stake in expected_stakes().items() if stake is not None}
    assert len(stakes) < sum(1 for stake in expected_stakes().values() if stake is not None), "some share a day"
    page = client_as("ops").get("/ledger/").content.decode()
    assert minor_units(page, "holds-at-stake") == sum(stakes.values()) > 0


def test_each_preset_is_set_against_a_period_like_it():
    wednesday = date(2027, 3, 31)
    assert (last_14_days(wednesday).first, last_14_days(wednesday).before_first,
            last_14_days(wednesday).before_last) == (date(2027, 3, 18), date(2027, 3, 4), date(2027, 3, 17))
    week = this_week(wednesday)
    assert (week.first, week.last, week.before_first, week.before_last) == (
        date(2027, 3, 29), wednesday, date(2027, 3, 22), date(2027, 3, 24))
    month = this_month(wednesday)  # February is shorter: its last day stands for the 29th to the 31st
    assert (month.first, month.before_first, month.before_last) == (
        date(2027, 3, 1), date(2027, 2, 1), date(2027, 2, 28))
    january = last_month(date(2027, 1, 15))
    assert (january.first, january.last, january.before_first, january.before_last) == (
        date(2026, 12, 1), date(2026, 12, 31), date(2026, 11, 1), date(2026, 11, 30))
    assert [len(preset.days) for preset in dashboard_money.presets(wednesday)] == [14, 3, 31, 28]
