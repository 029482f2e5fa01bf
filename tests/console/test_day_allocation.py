"""Allocate days (finance): a request from the console, the owner's loop to its end, progress a reload keeps."""

from __future__ import annotations

import re
from datetime import date, timedelta

import pytest
from django.test import Client

from ledger_engine.application import day_freeze
from porto_console import ledger as console_ledger
from porto_console.console.handles import seal
from porto_console.console.services.day_allocation import request_id_for
from porto_console.console.services.users import sync_user
from tests.conftest import EnvelopeFactory
from tests.money_allocation.test_allocate_day import funded_first_days, oracle_totals, paid_by_lines
from tests.money_allocation.world import FINANCE, FIRST_DAY, MoneyWorld, fixture_commands
from tests.support import step_up

LISTENERS = 30
PAGE = "/ledger/day-allocation/"


@pytest.fixture
def city(tmp_path):
    """The console's owner, with ``LISTENERS`` funded listeners whose first day is closed and not allocated."""
    owner = console_ledger.open_owner(tmp_path / "ledger", genesis=step_up.genesis())
    with fixture_commands():
        world = MoneyWorld(owner, EnvelopeFactory()).setup()
        funded_first_days(world, [f"listener-{number:04d}" for number in range(LISTENERS)])
        yield world
    console_ledger.close_owner()


def signed_in(name: str, role: str) -> Client:
    user, _ = sync_user(name, roles=[role], active=True)
    client = Client()
    client.force_login(user)
    return client


def first_day() -> date:
    return date(1970, 1, 1) + timedelta(days=FIRST_DAY)


def test_finance_allocates_a_day_and_its_progress_page_shows_it_done_after_a_reload(city, db):
    finance = signed_in(FINANCE, "finance")
    form = finance.get(PAGE).content.decode()
    command_id = re.search(r'name="command_id" value="([^"]+)"', form).group(1)
    answer = finance.post(PAGE, {"command_id": command_id, "first": first_day().isoformat()})
    request_id = request_id_for(command_id)
    assert answer.status_code == 302 and answer["Location"].endswith(f"/day-allocation/{seal('day-allocation', request_id)}/")
    assert city.state(f"day_allocation/{request_id}")["status"] == "requested"

    day_freeze.run_requests(city.owner, console_ledger.gateway().evidence, [request_id], workers=1)

    for _ in range(2):  # the page reads the ledger's record: a reload shows the same
        page = finance.get(answer["Location"]).content.decode()
        assert re.search(r'id="allocation-status"><span class="enum" title="done">Done</span>', page), page[:3000]
        assert f'id="allocation-frozen">{LISTENERS}<' in page and "None: every listener-day" in page
    assert paid_by_lines(city.owner) == oracle_totals(list(range(LISTENERS)))
    listed = finance.get(PAGE).content.decode()
    assert request_id[:20] in listed and "Done" in listed


def test_a_range_longer_than_a_request_may_hold_is_refused_on_the_form(city, db):
    finance = signed_in(FINANCE, "finance")
    head = city.owner.head()
    page = finance.post(PAGE, {"command_id": "3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "first": "2026-10-01",
                               "last": "2026-12-31"}).content.decode()
    assert "The last day is the first day or up to 30 days after it." in page and city.owner.head() == head


def test_an_auditor_reads_requests_but_cannot_make_one_and_ops_cannot_open_the_screen(city, db):
    auditor = signed_in("auditor-1", "auditor")
    page = auditor.get(PAGE)
    assert page.status_code == 200 and 'id="allocate"' not in page.content.decode()
    head = city.owner.head()
    refused = auditor.post(PAGE, {"command_id": "4a1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d", "first": "2026-10-01"})
    assert city.owner.head() == head and refused.status_code in (200, 403)
    assert signed_in("ops-1", "ops").get(PAGE).status_code == 403
