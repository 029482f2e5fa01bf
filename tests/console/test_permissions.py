"""Every URL the console serves, by every role and anonymously, GET and POST, generated from the URL configuration.

``MATRIX`` has one row per URL pattern: who may read it and who may post to
it. The first test walks the live URL configuration and fails for any pattern
without a row (and any row without a pattern), so a new screen cannot be added
without saying who may use it. Refused requests must change nothing in the
ledger; the ledger checks each actor's roles again itself.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from ledger_engine.layout import INDEXES, STATE
from porto_console.console.commands import new_command_id
from porto_console.console.handles import seal
from porto_console.console.roles import CONSOLE_ROLES, command_roles
from porto_console.console.services.users import ensure_groups, sync_user
from tests.console.conftest import STAFF

ANONYMOUS, NO_ROLE = "anonymous", "no role"
REQUESTERS = (*CONSOLE_ROLES, NO_ROLE, ANONYMOUS)
EVERYONE = frozenset(CONSOLE_ROLES)
FINANCE_AUDITOR = frozenset({"finance", "auditor"})
ADMIN_AUDITOR = frozenset({"admin", "auditor"})
OPS_AUDITOR = frozenset({"ops", "auditor"})
ADMIN_OPS = frozenset({"admin", "ops"})
NO_HASH = "0" * 64
CONSERVATION_CHECKERS = frozenset({"finance", "ops", "auditor"})


@dataclass(frozen=True)
class Row:
    """Who may use one URL pattern.

    ``get`` and ``post`` are the console roles that may; ``None`` means the
    method is refused (405) to those the URL's screen admits (``screen``).
    ``post_data`` is a well-formed (if forged) form. ``statuses`` overrides the
    expected status per requester for URLs outside the console's role rules.
    """

    get: frozenset[str] | None = None
    post: frozenset[str] | None = None
    screen: frozenset[str] = frozenset()
    post_data: Callable[["Targets"], dict] = lambda targets: {}
    statuses: dict[tuple[str, str], int] = field(default_factory=dict)

    def expected(self, method: str, requester: str) -> set[int]:
        if (method, requester) in self.statuses:
            return {self.statuses[(method, requester)]}
        if requester == ANONYMOUS:
            return {302}  # to the sign-in page
        allowed = self.get if method == "GET" else self.post
        if allowed is None:
            return {405} if requester in (self.screen or EVERYONE) else {403}
        return ({200} if method == "GET" else {200, 302}) if requester in allowed else {403}


def worker_api(method: str) -> Row:
    """The internal API answers only bearer credentials: a console session is nobody there (and a route's other
    method is not allowed at all)."""
    other = "POST" if method == "GET" else "GET"
    return Row(statuses={**{(method, requester): 401 for requester in REQUESTERS},
                         **{(other, requester): 405 for requester in REQUESTERS}})


def fixed(status: int, *, anonymous: int | None = None, **by_requester: int) -> Row:
    """The same answer for everyone signed in (``anonymous`` may differ)."""
    statuses = {}
    for method in ("GET", "POST"):
        for requester in REQUESTERS:
            statuses[(method, requester)] = status
        if anonymous is not None:
            statuses[(method, ANONYMOUS)] = anonymous
    for key, value in by_requester.items():
        method, requester = key.split("_", 1)
        statuses[(method.upper(), requester.replace("_", " "))] = value
    return Row(statuses=statuses)


def staff_docs() -> Row:
    """The API docs and schema: any signed-in staff member (whatever the method), nobody else."""
    statuses = {(method, requester): 200 for method in ("GET", "POST") for requester in REQUESTERS}
    statuses[("GET", ANONYMOUS)] = statuses[("POST", ANONYMOUS)] = 302
    return Row(statuses=statuses)


def decide_hold(targets: "Targets") -> dict:
    return {"command_id": new_command_id(), "decision": "release", "reason": "evidence_verified", "revision": "1"}


MATRIX: dict[str, Row] = {
    # The worker API.
    "internal/": fixed(404),
    "^internal/$": fixed(404),  # the API's root and any path under it that no route matches: its JSON 404
    "^internal/": fixed(404),
    "internal/openapi.json": staff_docs(),
    "internal/docs": staff_docs(),
    "internal/commands": worker_api("POST"),
    "internal/commands/<command_id>": worker_api("GET"),
    "internal/effects": worker_api("GET"),
    "internal/effects/<effect_id>": worker_api("GET"),
    "internal/effects/<effect_id>/claim": worker_api("POST"),
    "internal/head": worker_api("GET"),
    "internal/dispatch": worker_api("GET"),
    "internal/payments/<payment_id>": worker_api("GET"),
    "internal/attempts": worker_api("GET"),
    "internal/batches": worker_api("GET"),
    "internal/journal-tree": worker_api("GET"),
    "internal/statements/<statement_id>/file": worker_api("GET"),
    "internal/statements/<statement_id>/parts/<line_id>": worker_api("GET"),
    "internal/evidence": worker_api("POST"),
    "internal/batch": worker_api("POST"),
    "internal/maintenance/backups": worker_api("POST"),
    # The recipient's statement verifier: a static page for anyone, signed in or not.
    "verify/": Row(statuses={**{("GET", requester): 200 for requester in REQUESTERS},
                             **{("POST", requester): 405 for requester in REQUESTERS}}),
    # Health and metrics: for probes and scrapers, never for a session. /healthz answers anyone (200: ready);
    # /metrics answers only its bearer token, so every session is 403 while no token is configured.
    "healthz": Row(statuses={**{("GET", requester): 200 for requester in REQUESTERS},
                             **{("POST", requester): 405 for requester in REQUESTERS}}),
    "metrics": Row(statuses={**{("GET", requester): 403 for requester in REQUESTERS},
                             **{("POST", requester): 405 for requester in REQUESTERS}}),
    # Self-service enrolment: without a valid link, nothing (a styled 404).
    "enrol/": fixed(404),
    "enrol/<str:token>/": fixed(404),
    # The ledger screens.
    "ledger/": Row(get=EVERYONE, post=EVERYONE),
    "ledger/search/": Row(get=EVERYONE, post=EVERYONE, post_data=lambda t: {"term": "no-such-record"}),
    "ledger/dispatch/pause/": Row(post=ADMIN_OPS, screen=ADMIN_OPS, post_data=lambda t: {
        "command_id": new_command_id(), "reason": "matrix probe", "otp_token": "123456"}),
    "ledger/dispatch/resume/": Row(post=ADMIN_OPS, screen=ADMIN_OPS, post_data=lambda t: {
        "command_id": new_command_id(), "reason": "matrix probe"}),
    "ledger/dispatch/resume/approve/": Row(post=frozenset({"admin"}), screen=frozenset({"admin"}),
                                           post_data=lambda t: {"command_id": new_command_id(),
                                                                "resume_id": "no-such-resume", "otp_token": "123456"}),
    "ledger/dispatch/resume/decline/": Row(post=frozenset({"admin"}), screen=frozenset({"admin"}),
                                           post_data=lambda t: {"command_id": new_command_id(),
                                                                "resume_id": "no-such-resume",
                                                                "reason": "requested_in_error"}),
    "ledger/quarantine/": Row(get=OPS_AUDITOR, post=OPS_AUDITOR),
    "ledger/quarantine/retry/": Row(post=frozenset({"ops"}), screen=frozenset({"ops"}),
                                    post_data=lambda t: {"all": "1"}),
    "ledger/quarantine/<str:handle>/retry/": Row(post=frozenset({"ops"}), screen=frozenset({"ops"})),
    "ledger/holds/": Row(get=OPS_AUDITOR, post=OPS_AUDITOR),
    "ledger/holds/bulk/": Row(post=frozenset({"ops"}), screen=frozenset({"ops"}), post_data=lambda t: {
        "command_id": new_command_id(), "hold_reason": "late", "holds": ["demo-hold"], "decision": "reject",
        "reason": "policy_violation"}),
    "ledger/holds/<str:handle>/": Row(get=OPS_AUDITOR, post=frozenset({"ops"}), post_data=decide_hold),
    "ledger/payouts/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/payouts/prepare/": Row(get=frozenset({"finance"}), post=frozenset({"finance"}), post_data=lambda t: {
        "command_id": new_command_id(), "recipients": ["demo-artist-01"], "seen_payables": NO_HASH}),
    "ledger/payouts/payments/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/payouts/<str:handle>/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/payouts/<str:handle>/approve/": Row(post=frozenset({"finance"}), screen=FINANCE_AUDITOR, post_data=lambda t: {
        "command_id": new_command_id(), "seen_hash": NO_HASH, "otp_token": "123456"}),
    "ledger/payouts/<str:handle>/cancel/": Row(post=frozenset({"finance"}), screen=FINANCE_AUDITOR, post_data=lambda t: {
        "command_id": new_command_id(), "reason": "superseded", "revision": "1"}),
    # Finance downloads a recipient's statement file (the demo's statement index is anchored with its tree).
    "ledger/statements/<str:handle>/file/": Row(get=frozenset({"finance"}), screen=frozenset({"finance"})),
    # ... beside it, its day lines' parts files (the demo's have none: back to the statement's files, saying why).
    "ledger/statements/<str:handle>/": Row(get=frozenset({"finance"}), screen=frozenset({"finance"})),
    "ledger/statement-parts/<str:handle>/": Row(get=frozenset({"finance"}), screen=frozenset({"finance"}),
                                                statuses={("GET", "finance"): 302}),
    "ledger/recipients/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/recipients/request/": Row(get=frozenset({"finance"}), post=frozenset({"finance"}), post_data=lambda t: {
        "command_id": new_command_id(), "recipient_id": "demo-artist-01", "payout_address": "0x" + "7a" * 32,
        "evidence": "signed by the new address"}),
    "ledger/recipients/<str:handle>/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/recipients/<str:handle>/approve/": Row(post=frozenset({"finance"}), screen=FINANCE_AUDITOR,
                                                   post_data=lambda t: {"command_id": new_command_id(),
                                                                        "otp_token": "123456"}),
    "ledger/recipients/<str:handle>/decline/": Row(post=frozenset({"finance"}), screen=FINANCE_AUDITOR,
                                                   post_data=lambda t: {"command_id": new_command_id(),
                                                                        "reason": "requested_in_error"}),
    "ledger/corrections/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/corrections/request/": Row(get=frozenset({"finance"}), post=frozenset({"finance"}), post_data=lambda t: {
        "command_id": new_command_id(), "budget_id": "no-such-budget", "reason": "rights_error", "reverses": "",
        "replacements": "[]", "remainder_to": "unallocated", "refund_unallocated": "0"}),
    "ledger/corrections/<str:handle>/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/corrections/<str:handle>/approve/": Row(post=frozenset({"finance"}), screen=FINANCE_AUDITOR,
                                                    post_data=lambda t: {"command_id": new_command_id(),
                                                                         "seen_hash": NO_HASH, "otp_token": "123456"}),
    "ledger/corrections/<str:handle>/decline/": Row(post=frozenset({"finance"}), screen=FINANCE_AUDITOR,
                                                    post_data=lambda t: {"command_id": new_command_id(),
                                                                         "reason": "requested_in_error"}),
    "ledger/day-allocation/": Row(get=FINANCE_AUDITOR, post=frozenset({"finance"}), post_data=lambda t: {
        "command_id": new_command_id(), "first": "2026-10-01"}),
    # The demo ledger holds no day allocation request: those who may open one are told there is none.
    "ledger/day-allocation/<str:handle>/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR, statuses={
        (method, role): 404 for method in ("GET", "POST") for role in FINANCE_AUDITOR}),
    "ledger/budgets/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/budgets/payables/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/accounts/": Row(get=ADMIN_AUDITOR, post=ADMIN_AUDITOR),
    "ledger/accounts/new/": Row(get=frozenset({"admin"}), post=frozenset({"admin"}), post_data=lambda t: {
        "command_id": new_command_id(), "kind": "staff", "account_id": "forged-ops", "identity": "f@porto.test",
        "roles": ["ops"]}),
    "ledger/accounts/<str:handle>/": Row(get=ADMIN_AUDITOR, post=frozenset({"admin"}), post_data=lambda t: {
        "command_id": new_command_id(), "revision": "1", "roles": []}),
    "ledger/accounts/<str:handle>/request/": Row(post=frozenset({"admin"}), screen=frozenset({"admin"}),
                                                 post_data=lambda t: {"command_id": new_command_id(),
                                                                      "change": "grant_role:finance"}),
    "ledger/accounts/<str:handle>/link/": Row(post=frozenset({"admin"}), screen=frozenset({"admin"}),
                                              post_data=lambda t: {"command_id": new_command_id()}),
    "ledger/staff-changes/": Row(get=ADMIN_AUDITOR, post=ADMIN_AUDITOR),
    "ledger/staff-changes/<str:handle>/": Row(get=ADMIN_AUDITOR, post=ADMIN_AUDITOR),
    "ledger/staff-changes/<str:handle>/approve/": Row(post=frozenset({"admin"}), screen=frozenset({"admin"}),
                                                      post_data=lambda t: {"command_id": new_command_id(),
                                                                           "otp_token": "123456"}),
    "ledger/staff-changes/<str:handle>/decline/": Row(post=frozenset({"admin"}), screen=frozenset({"admin"}),
                                                      post_data=lambda t: {"command_id": new_command_id(),
                                                                           "reason": "requested_in_error"}),
    "ledger/lockouts/": Row(get=frozenset({"admin"}), post=frozenset({"admin"})),
    "ledger/lockouts/<str:handle>/clear/": Row(post=frozenset({"admin"}), screen=frozenset({"admin"}),
                                               post_data=lambda t: {"command_id": new_command_id()}),
    "ledger/journal/": Row(get=ADMIN_AUDITOR, post=ADMIN_AUDITOR),
    "ledger/journal/lookup/": Row(post=ADMIN_AUDITOR, screen=ADMIN_AUDITOR,
                                  post_data=lambda t: {"command_id": new_command_id()}),
    "ledger/journal/verify/": Row(post=ADMIN_AUDITOR, screen=ADMIN_AUDITOR, post_data=lambda t: {"first": 1, "last": 2}),
    "ledger/journal/export/": Row(post=frozenset({"auditor"}), screen=ADMIN_AUDITOR, post_data=lambda t: {
        "command_id": new_command_id(), "first": 1, "last": 2, "file_format": "json"}),
    "ledger/journal/export-csv/": Row(post=frozenset({"auditor"}), screen=ADMIN_AUDITOR, post_data=lambda t: {
        "command_id": new_command_id()}),
    "ledger/journal/<int:sequence>/": Row(get=ADMIN_AUDITOR, post=ADMIN_AUDITOR),
    # Accounting: read-only screens, and the full conservation check for those the ledger lets run it.
    "ledger/accounting/trial-balance/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/accounting/statement/": Row(get=FINANCE_AUDITOR, post=FINANCE_AUDITOR),
    "ledger/accounting/history/<str:kind>/<str:handle>/": Row(get=EVERYONE, post=EVERYONE),
    "ledger/accounting/conservation-check/": Row(post=CONSERVATION_CHECKERS, screen=CONSERVATION_CHECKERS,
                                                 post_data=lambda t: {"command_id": new_command_id()}),
    # Django's admin frame: sign-in and sign-out, one's own password; no model screens at all.
    "": Row(get=EVERYONE, post=EVERYONE, statuses={
        **{(method, role): 302 for method in ("GET", "POST") for role in CONSOLE_ROLES},  # to the dashboard
        ("GET", NO_ROLE): 200, ("POST", NO_ROLE): 200}),  # "no role: nothing here"
    "login/": fixed(200, **{f"get_{role}": 302 for role in CONSOLE_ROLES}, get_no_role=302),
    "logout/": fixed(405, anonymous=302, **{f"post_{role}": 200 for role in CONSOLE_ROLES}, post_no_role=200),
    "password_change/": Row(get=EVERYONE | {NO_ROLE}, post=EVERYONE | {NO_ROLE}),
    "password_change/done/": Row(get=EVERYONE | {NO_ROLE}, screen=EVERYONE | {NO_ROLE}),
    "autocomplete/": fixed(405, anonymous=302, **{f"get_{role}": 403 for role in CONSOLE_ROLES}, get_no_role=403),
    "jsi18n/": Row(get=EVERYONE | {NO_ROLE}, screen=EVERYONE | {NO_ROLE}),
    "r/<path:content_type_id>/<path:object_id>/": fixed(404, anonymous=302),
    "(?P<url>.*)$": fixed(404, anonymous=302),
}


@dataclass(frozen=True)
class Targets:
    """Real records of the demo ledger to put in the URLs."""

    values: dict[str, str]


def url_patterns(patterns=None, prefix: str = ""):
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            yield from url_patterns(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            assert isinstance(pattern, URLPattern)
            yield prefix + str(pattern.pattern)


def test_every_url_the_console_serves_has_a_row_in_the_matrix():
    served = list(url_patterns())
    assert len(served) == len(set(served))
    assert set(served) - set(MATRIX) == set(), "add a row to MATRIX saying who may use each new URL"
    assert set(MATRIX) - set(served) == set(), "a MATRIX row names a URL the console no longer serves"


@pytest.fixture
def targets(ledger, users) -> Targets:
    """One real record for each kind of URL parameter: a handle each screen opens."""
    first = lambda prefix: ledger.scan(INDEXES if prefix.startswith("hold") else STATE, prefix, limit=1)[0][0]
    hold = first("hold_open/").rsplit("/", 1)[1]
    run = first("payment_run/").split("/", 1)[1]
    update = first("recipient_update/").split("/", 1)[1]
    change = first("staff_change/").split("/", 1)[1]
    correction = first("correction_request/").split("/", 1)[1]
    statement = first("statement/").split("/", 1)[1]
    attempt = AccessAttempt.objects.create(username="someone", ip_address="10.9.8.7", failures_since_start=5,
                                           get_data="", post_data="", http_accept="", path_info="/login/")
    return Targets({
        "ledger/holds/": seal("hold", hold), "ledger/payouts/": seal("run", run),
        "kind": "run", "ledger/accounting/history/run/": seal("run", run),
        "ledger/recipients/": seal("recipient-update", update), "ledger/accounts/": seal("account", STAFF["ops"]),
        "ledger/staff-changes/": seal("staff-change", change), "ledger/lockouts/": seal("lockout", str(attempt.pk)),
        "ledger/corrections/": seal("correction", correction), "ledger/statements/": seal("statement", statement),
        "ledger/statement-parts/": seal("statement-day-line", f"{statement}/dayline-none"), "line_id": "dayline-none",
        "ledger/day-allocation/": seal("day-allocation", "no-such-request"),
        "statement_id": statement, "ledger/quarantine/": seal("effect", "demo-effect"), "command_id": str(uuid.uuid4()),
        "effect_id": "demo-effect", "payment_id": "demo-payment", "sequence": "1", "token": "not-a-token",
        "content_type_id": "1", "object_id": "1", "url": "no-such-page/"})


def concrete(pattern: str, targets: Targets) -> str:
    """``pattern`` with each parameter replaced by a real value (handles by the screen they belong to)."""
    if pattern == "(?P<url>.*)$":
        return "/" + targets.values["url"]
    if pattern.startswith("^"):
        return "/" + pattern.strip("^$") + ("" if pattern.endswith("$") else "no-such-route")
    path = pattern
    while "<" in path:
        start, end = path.index("<"), path.index(">")
        name = path[start + 1:end].split(":")[-1]
        value = targets.values[path[:start]] if name == "handle" else targets.values[name]
        path = path[:start] + value + path[end + 1:]
    return "/" + path


def client_with_roles(roles: list[str], name: str = "probe", groups: dict | None = None) -> Client:
    user, _ = sync_user(name, roles=roles, active=True, groups=groups)
    client = Client()
    client.force_login(user)
    return client


def client_for(requester: str, groups: dict | None = None) -> Client:
    if requester == ANONYMOUS:
        return Client()
    return client_with_roles([] if requester == NO_ROLE else [requester], f"probe-{requester.replace(' ', '-')}",
                             groups)


@pytest.mark.parametrize("pattern", list(MATRIX))
def test_each_url_answers_each_requester_as_its_row_says(ledger, targets, pattern):
    """Refused requests (and reads) change nothing in the ledger; requests the row allows reach the view."""
    row, url = MATRIX[pattern], concrete(pattern, targets)
    # Refusals first, so a request that is allowed (and may change the ledger) runs last.
    order = sorted(((method, requester) for method in ("GET", "POST") for requester in REQUESTERS),
                   key=lambda case: max(row.expected(*case)) < 400)
    groups = ensure_groups()
    clients = {requester: client_for(requester, groups) for requester in REQUESTERS}
    for method, requester in order:
        head = ledger.head()
        client = clients[requester]
        response = client.get(url) if method == "GET" else client.post(url, row.post_data(targets))
        assert response.status_code in row.expected(method, requester), (method, requester, url, response.status_code)
        if response.status_code == 302 and requester == ANONYMOUS and pattern.startswith("ledger/"):
            assert response["Location"].startswith("/login/")
        if response.status_code >= 400 or method == "GET" or row.post is None or requester not in row.post:
            assert ledger.head() == head, (method, requester, url)


COMMAND_FORMS = {"ledger/accounts/new/": "RegisterAccount", "ledger/accounts/<str:handle>/": "RegisterAccount",
                 "ledger/holds/<str:handle>/": "DecideHold", "ledger/recipients/request/": "UpdateRecipient",
                 "ledger/accounts/<str:handle>/request/": "RequestStaffChange"}


@pytest.mark.parametrize("pattern", list(COMMAND_FORMS))
def test_a_console_group_the_ledger_does_not_grant_is_refused_by_the_ledger(ledger, targets, pattern):
    """An auditor actor put into the command's group in Django alone: the view lets it through, the ledger does not."""
    granted = sorted(command_roles(COMMAND_FORMS[pattern]))[0]
    user, _ = sync_user(STAFF["auditor"], roles=[granted], active=True)
    client = Client()
    client.force_login(user)
    head = ledger.head()
    response = client.post(concrete(pattern, targets), MATRIX[pattern].post_data(targets), follow=True)
    entry = ledger.journal_entry(head.sequence + 1)
    assert (entry["envelope"]["actor_id"], entry["outcome"]) == (STAFF["auditor"], "rejected")
    assert entry["result"]["code"] == "CAPABILITY_MISSING"
    assert "Not allowed: CAPABILITY_MISSING" in response.content.decode()
    assert not User.objects.filter(username="forged-ops").exists()
