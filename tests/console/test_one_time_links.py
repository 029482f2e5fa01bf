"""A one-time link is spent by its first opening: that browser alone holds it, for minutes; a second is refused."""

from __future__ import annotations

import json
import logging
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import URLPattern, get_resolver
from django.utils import timezone

from porto_console.console.handles import seal
from porto_console.console.models import EnrolmentLink
from porto_console.console.services import enrolment
from porto_console.console.views.enrolment import SESSION_KEY
from porto_console.operations.log_redaction import ONE_TIME_LINK_PREFIXES
from tests.console.conftest import enrolment_link
from tests.console.test_accounts import pending_code, provision

ENROLMENT = {"password1": "a long new passphrase 7", "password2": "a long new passphrase 7"}


@pytest.fixture
def clock(monkeypatch):
    """Django's clock, which a test moves on: ``clock.advance(minutes=15)``."""

    class Clock:
        offset = timedelta()

        def advance(self, **delta) -> None:
            self.offset += timedelta(**delta)

    moved = Clock()
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + moved.offset)
    return moved


@pytest.fixture
def link(client_as, ledger, mailoutbox) -> str:
    """The path of a new ops account's first enrolment link, as mailed to its owner."""
    provision(client_as("admin"))
    return enrolment_link(mailoutbox, "ops-3")


def account_page(client_as) -> str:
    return client_as("admin").get(f"/ledger/accounts/{seal('account', 'ops-3')}/").content.decode()


def test_the_first_opening_redirects_to_a_token_less_page_that_this_browser_alone_can_use(link):
    owner = Client()
    response = owner.get(link)
    assert response.status_code == 302 and response["Location"] == "/enrol/"
    assert link.rsplit("/", 2)[-2] not in json.dumps(dict(owner.session))  # the session holds a claim, not the token
    page = owner.get("/enrol/").content.decode()
    assert 'id="totp-secret"' in page and "in this browser only" in page
    assert owner.get(link)["Location"] == "/enrol/"  # opening it again here is no second browser
    assert EnrolmentLink.objects.get(user__username="ops-3").refused_opens == 0
    assert owner.post("/enrol/", {**ENROLMENT, "otp_token": pending_code("ops-3")})["Location"] == "/"


def test_a_second_opening_from_another_browser_is_refused_ends_the_link_and_is_shown_to_admins(link, client_as,
                                                                                              caplog):
    first, intruder = Client(), Client()
    first.get(link)
    with caplog.at_level(logging.WARNING, logger="porto.console.enrolment"):
        second = intruder.get(link)
    assert second.status_code == 403 and "already opened in another browser" in second.content.decode()
    assert SESSION_KEY not in intruder.session and intruder.get("/enrol/").status_code == 404
    # Two browsers had it and nothing tells which was the owner's: the first cannot finish either.
    assert first.get("/enrol/").status_code == 404
    assert first.post("/enrol/", {**ENROLMENT, "otp_token": "123456"}).status_code == 404
    stored = EnrolmentLink.objects.get(user__username="ops-3")
    assert (stored.refused_opens, stored.used_at) == (1, None) and stored.revoked_at is not None
    assert 'id="enrolment-refused-open"' in account_page(client_as)
    [refusal] = [record for record in caplog.records if record.name == "porto.console.enrolment"]
    assert refusal.link_id == stored.link_id and refusal.account_id == "ops-3"


def test_opening_a_link_someone_already_used_is_refused_and_shown_to_admins(link, client_as):
    first = Client()
    first.get(link)
    first.get("/enrol/")
    first.post("/enrol/", {**ENROLMENT, "otp_token": pending_code("ops-3")})
    assert 'id="enrolment-refused-open"' not in account_page(client_as)
    assert Client().get(link).status_code == 403
    page = account_page(client_as)
    assert 'id="enrolment-status">enrolled' in page and 'id="enrolment-refused-open"' in page


def test_an_opened_link_lives_minutes_not_hours(link, clock, settings):
    owner = Client()
    owner.get(link)
    stored = EnrolmentLink.objects.get(user__username="ops-3")
    assert stored.expires_at <= stored.opened_at + timedelta(seconds=settings.ENROLMENT_LINK_OPEN_TTL_S)
    assert settings.ENROLMENT_LINK_OPEN_TTL_S == 15 * 60
    clock.advance(minutes=14)
    assert owner.get("/enrol/").status_code == 200
    clock.advance(minutes=1, seconds=1)
    assert owner.get("/enrol/").status_code == 404
    refused = owner.post("/enrol/", {**ENROLMENT, "otp_token": pending_code("ops-3")})
    assert refused.status_code == 404 and not EnrolmentLink.objects.get(pk=stored.pk).used_at


def test_an_unopened_link_keeps_its_day(link, clock):
    clock.advance(hours=23)
    owner = Client()
    assert owner.get(link)["Location"] == "/enrol/" and owner.get("/enrol/").status_code == 200


def test_of_two_browsers_opening_at_once_one_gets_the_claim(link):
    seen_by_both = EnrolmentLink.objects.get(user__username="ops-3")
    assert enrolment.open_once(seen_by_both) is not None
    assert enrolment.open_once(seen_by_both) is None


def test_every_route_that_takes_a_token_lies_under_a_one_time_link_prefix():
    tokenised = ["/" + str(pattern.pattern) for pattern in get_resolver().url_patterns
                 if isinstance(pattern, URLPattern) and "token" in pattern.pattern.converters]
    assert tokenised == ["/enrol/<str:token>/"]
    assert all(route.startswith(ONE_TIME_LINK_PREFIXES) for route in tokenised)
