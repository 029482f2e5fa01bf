"""Shared fixtures: a fresh ledger owner and an envelope factory; the store tier of each test."""

from __future__ import annotations

import gc
import hashlib
import uuid
from typing import Any

import pytest
from django.core.servers.basehttp import WSGIRequestHandler

from ledger_engine.application import admission_clock
from ledger_engine.application.envelopes import build_envelope
from ledger_engine.application.owner import LedgerOwner
from tests.support import store_tier, tiers  # noqa: F401 (tiers loads the fast tier's Hypothesis profile)
from tests.support.step_up import genesis as step_up_genesis, stepped_up

# postgres_server_url and postgres_database_url: one PostgreSQL (and one database) per test session;
# initialised_repository: an empty restic repository, initialised once per test process and copied per test.
pytest_plugins = ("tests.support.postgres", "tests.support.restic")

GENESIS_ADMIN = "genesis-admin"
# The suite dates its commands on synthetic clocks from 2026-10 into 2027, whatever today is; an owner in this
# process reads this as its wall clock, so those dates are never "ahead". Tests of the bound pin their own clock.
SUITE_WALL_CLOCK_MS = 2_000_000_000_000


def pytest_configure(config):
    store_tier.enable()
    # Django's test server writes a response's headers and body apart; under Nagle's algorithm the body waits for
    # the client's delayed ACK, about 40 ms on every request to a live server.
    WSGIRequestHandler.disable_nagle_algorithm = True


def pytest_collection_finish(session):
    # Everything imported and collected lives as long as the run: the collector need not walk it again.
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Tests not marked ``durable`` or ``slow_kill`` run on the store that skips fsync (docs/adr/0043)."""
    with store_tier.store_for(item):
        yield


class EnvelopeFactory:
    """Builds valid envelopes with fresh command IDs and a nondecreasing admission clock.

    The ledger refuses admission times below the last journalled one, so a
    time a caller chooses also moves the clock: later envelopes never fall
    behind it.
    """

    def __init__(self) -> None:
        self.clock_ms = 1_790_812_800_000 - 1_000  # the first envelope is admitted at 1_790_812_800_000

    def tick(self, milliseconds: int = 1_000) -> int:
        self.clock_ms += milliseconds
        return self.clock_ms

    def advance_to(self, timestamp_ms: int) -> None:
        """Later envelopes are admitted after ``timestamp_ms`` (a ledger's floor, another clock's time); the clock
        never runs back."""
        self.clock_ms = max(self.clock_ms, timestamp_ms)

    def __call__(self, command_type: str, payload: dict[str, Any], *, actor: str = GENESIS_ADMIN,
                 expected: list[dict[str, Any]] = (), evidence: list[str] = (),
                 command_id: str | None = None, step_up: bool = False, **overrides: Any) -> dict[str, Any]:
        """``step_up=True`` adds a proof from the test step-up key (``tests.support.step_up``)."""
        chosen = overrides.pop("admitted_at_ms", None)
        if chosen is not None:
            self.advance_to(chosen)
        admitted_at_ms = chosen if chosen is not None else self.tick()
        envelope = build_envelope(command_type, payload, command_id=command_id or str(uuid.uuid4()),
                                  actor_id=actor, admitted_at_ms=admitted_at_ms,
                                  expected_revisions=expected, evidence_hashes=evidence)
        envelope.update(overrides)
        return stepped_up(envelope) if step_up else envelope

    @staticmethod
    def digest(*parts: object) -> str:
        return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()

    def account(self, account_id: str, kind: str = "staff", roles: list[str] = (), **extra: Any) -> dict[str, Any]:
        payload = {"account_id": account_id, "kind": kind, "identity_digest": self.digest("id", account_id),
                   "roles": sorted(roles), **extra}
        return self("RegisterAccount", payload)


@pytest.fixture(autouse=True)
def suite_wall_clock(monkeypatch):
    monkeypatch.setattr(admission_clock, "wall_clock_ms", lambda: SUITE_WALL_CLOCK_MS)


@pytest.fixture
def envelopes() -> EnvelopeFactory:
    return EnvelopeFactory()


@pytest.fixture
def ledger_dir(tmp_path):
    return tmp_path / "ledger"


@pytest.fixture
def owner(ledger_dir):
    with LedgerOwner.open(ledger_dir, genesis=step_up_genesis()) as ledger:
        yield ledger
