"""A small money world for allocation tests: actors, recipients, rights, lots, periods, closed days.

Periods and closed listener-days belong to the streaming domain. Tests make
them through ``TestStreamingRecords``, a test-only command registered by
``fixture_commands()`` (``tests/support/fixture_commands.py``) and removed
afterwards, never by writing to RocksDB.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.selectors.money_queries import allocation_plan
from tests.conftest import GENESIS_ADMIN, EnvelopeFactory
from tests.support import payloads, step_up
from tests.support.fixture_commands import fixture_commands  # noqa: F401  (tests import it from here)
from tests.support.store import changed_keys, owner_dump, rejection_footprint

INGEST = "ingest-1"
FINANCE = "fin-1"
FINANCE_2 = "fin-2"
ARTISTS = ("artist-a", "artist-b", "artist-c")
OPERATORS = ("operator-x", "operator-y")
RIGHTS = {
    "work-1": {"artist-a": 10_000},
    "work-2": {"artist-a": 5_000, "artist-b": 5_000},
    "work-3": {"artist-b": 3_333, "artist-c": 6_667},
}
FIRST_DAY = 20_727  # 2026-10-01 as a UTC day number

# Day one of listener-1's 30-day period, worked by hand in test_allocate.py.
LISTENER = "listener-1"
BUDGET = 3_000_000  # 3 USDC over 30 days: day one's slice is exactly 100_000
DAY_ONE_WORKS = {"work-1": 60_000, "work-2": 30_000, "work-3": 10_000}
DAY_ONE_NODES = {"node-1": ("operator-x", 700), "node-2": ("operator-y", 300)}
DAY_ONE_LINES = [f"l-{n}" for n in range(8)]
NODES = {"node-1": "operator-x", "node-2": "operator-y", "node-3": "operator-x"}


class MoneyWorld:
    """Submits the commands allocation tests need, with valid defaults."""

    def __init__(self, owner: LedgerOwner, envelopes: EnvelopeFactory) -> None:
        self.owner = owner
        self.envelopes = envelopes
        self.line_counter = 0

    def submit(self, command_type: str, payload: dict[str, Any], *, actor: str = GENESIS_ADMIN,
               expected: list[dict[str, Any]] = (), evidence: list[str] = (), step_up: bool = False) -> CommandOutcome:
        self.follow_the_ledger_clock()
        return self.owner.submit(self.envelopes(command_type, payload, actor=actor, expected=expected,
                                                evidence=evidence, step_up=step_up))

    def follow_the_ledger_clock(self) -> None:
        """Admit after whatever the ledger last admitted, whoever sent it (a console form, for one)."""
        self.envelopes.advance_to(self.owner.admission_floor_ms())

    def submit_ok(self, command_type: str, payload: dict[str, Any], **options: Any) -> CommandOutcome:
        outcome = self.submit(command_type, payload, **options)
        assert outcome.accepted, (command_type, outcome.result)
        return outcome

    def setup(self) -> "MoneyWorld":
        for envelope in (self.envelopes.account(INGEST, "worker", ["ingest"]),
                         self.envelopes.account(FINANCE, roles=["finance"]),
                         self.envelopes.account(FINANCE_2, roles=["finance"])):
            assert self.owner.submit(envelope).accepted
        for name in ARTISTS + OPERATORS:
            kind = "artist" if name in ARTISTS else "operator"
            assert self.owner.submit(self.envelopes.account(name, kind, payout_address=payloads.address(name))).accepted
        works = [payloads.work(work_id) for work_id in RIGHTS]
        self.submit_ok("ImportCatalogue", payloads.catalogue("import-1", *works), actor=INGEST)
        for work_id, splits in RIGHTS.items():
            self.submit_ok("ActivateWork", payloads.rights(work_id, splits), actor=INGEST)
        self.submit_ok("TestStreamingRecords", {"nodes": [
            {"node_id": node_id, "operator_id": operator_id} for node_id, operator_id in sorted(NODES.items())]})
        return self

    # Funding.
    def lot(self, lot_id: str, amount: int, budgets: list[dict[str, Any]] = ()) -> CommandOutcome:
        payload = {**payloads.funding(lot_id, str(amount)), "budgets": list(budgets)}
        return self.submit("ImportFunding", payload, actor=INGEST, evidence=[payloads.deposit_evidence(payload)])

    def fund(self, budget_id: str, period_id: str, draws: dict[str, int], *, version: int = 1,
             actor: str = INGEST) -> CommandOutcome:
        return self.submit("ImportFunding", {"budgets": [funding(budget_id, period_id, draws, version=version)]},
                           actor=actor)

    # Streaming stand-ins.
    def period(self, period_id: str, listener_id: str, *, days: int, first_day: int = FIRST_DAY,
               clearance: str = "cleared") -> None:
        start = first_day * DAY_MS
        self.submit_ok("TestStreamingRecords", {"periods": [{
            "period_id": period_id, "account_id": listener_id, "start_ms": start,
            "end_ms": start + days * DAY_MS, "days": days, "clearance": clearance}]})

    def closed_day(self, listener_id: str, day: int, period_id: str, works: dict[str, int],
                   nodes: dict[str, tuple[str, int]] = (), **fields: Any) -> None:
        """A closed listener-day with each work heard under rights version 1."""
        self.closed_day_heard(listener_id, day, period_id, {(w, 1): ms for w, ms in works.items()}, nodes, **fields)

    def closed_day_heard(self, listener_id: str, day: int, period_id: str, heard: dict[tuple[str, int], int],
                         nodes: dict[str, tuple[str, int]] = (), **fields: Any) -> None:
        """A closed listener-day; ``heard`` maps (work, rights version) to listened milliseconds."""
        self.submit_ok("TestStreamingRecords", {"days": [{
            "listener_id": listener_id, "day": day, "period_id": period_id,
            "works": [{"work_id": w, "rights_version": v, "listened_ms": ms} for (w, v), ms in sorted(heard.items())],
            "nodes": [{"node_id": n, "operator_id": op, "served_bytes": b} for n, (op, b) in sorted(dict(nodes).items())],
            **fields}]})

    # Allocation.
    def plan(self, listener_id: str, day: int, budget_id: str):
        return allocation_plan(self.owner.view(), listener_id, day, budget_id)

    def new_line_ids(self, count: int) -> list[str]:
        first = self.line_counter
        self.line_counter += count
        return [f"line-{number:06d}" for number in range(first, first + count)]

    def allocate(self, listener_id: str, day: int, budget_id: str, *, line_ids: list[str] | None = None,
                 expected: list[dict[str, Any]] | None = None, actor: str = FINANCE) -> CommandOutcome:
        plan = self.plan(listener_id, day, budget_id)
        return self.submit("AllocateListenerDay", {
            "listener_id": listener_id, "day": day, "budget_id": budget_id,
            "line_ids": self.new_line_ids(len(plan.lines)) if line_ids is None else line_ids,
        }, actor=actor, expected=plan.expected_revisions() if expected is None else expected)

    # Corrections: one finance actor requests, another decides.
    def request_correction(self, correction_id: str, budget_id: str, *, actor: str = FINANCE,
                           **fields: Any) -> CommandOutcome:
        payload = {"correction_id": correction_id, "budget_id": budget_id, "reason": "rights_error", **fields}
        return self.submit("RequestCorrection", payload, actor=actor)

    def decide_correction(self, correction_id: str, action: str = "approve", *, actor: str = FINANCE_2,
                          request_hash: str | None = None, decline_reason: str | None = None) -> CommandOutcome:
        request = self.state(f"correction_request/{correction_id}")
        payload = {"correction_id": correction_id, "action": action,
                   "request_hash": request_hash or (request["request_hash"] if request else "0" * 64)}
        if decline_reason is not None:
            payload["decline_reason"] = decline_reason
        return self.submit("DecideCorrection", payload, actor=actor, step_up=action == "approve")

    def correct(self, correction_id: str, budget_id: str, *, actor: str = FINANCE_2, requester: str = FINANCE,
                **fields: Any) -> CommandOutcome:
        """Request and approve; the request's outcome if it was refused, else the decision's."""
        requested = self.request_correction(correction_id, budget_id, actor=requester, **fields)
        return self.decide_correction(correction_id, actor=actor) if requested.accepted else requested

    def check(self, check_id: str, *, actor: str = FINANCE) -> CommandOutcome:
        return self.submit("CheckConservation", {"check_id": check_id}, actor=actor)

    def state(self, record_key: str) -> dict[str, Any] | None:
        record = self.owner.get("state", record_key)
        return record.data if record else None

    def assert_rejected_without_change(self, code: str, submit: Callable[[], CommandOutcome]) -> None:
        """``submit()`` is journalled as a rejection with ``code`` and writes nothing else."""
        before = owner_dump(self.owner)
        outcome = submit()
        assert (outcome.outcome, outcome.code) == ("rejected", code), outcome.result
        assert changed_keys(before, owner_dump(self.owner)) <= rejection_footprint(outcome.command_id, outcome.sequence)

    # Day one of listener-1.
    def fund_day_one(self) -> "MoneyWorld":
        """listener-1's period and budget, funded from lot-1, with day one closed."""
        self.period("period-1", LISTENER, days=30)
        assert self.lot("lot-1", 5_000_000).accepted
        assert self.fund("budget-1", "period-1", {"lot-1": BUDGET}).accepted
        self.closed_day(LISTENER, FIRST_DAY, "period-1", DAY_ONE_WORKS, DAY_ONE_NODES)
        return self

    def allocate_day_one(self) -> "MoneyWorld":
        outcome = self.allocate(LISTENER, FIRST_DAY, "budget-1", line_ids=DAY_ONE_LINES)
        assert outcome.accepted, outcome.result
        return self


class ScratchLedger:
    """A money world in a temporary directory, for state machines, which cannot use pytest fixtures."""

    def __init__(self, prefix: str) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix=prefix))
        self._fixtures = fixture_commands()
        self._fixtures.__enter__()
        self.owner = LedgerOwner.open(self.directory / "ledger", genesis=step_up.genesis())
        self.world = MoneyWorld(self.owner, EnvelopeFactory()).setup()

    def close(self) -> None:
        self.owner.close()
        self._fixtures.__exit__(None, None, None)
        shutil.rmtree(self.directory, ignore_errors=True)


def funding(budget_id: str, period_id: str, draws: dict[str, int], *, version: int = 1) -> dict[str, Any]:
    return {"budget_id": budget_id, "period_id": period_id, "version": version,
            "draws": [{"lot_id": lot_id, "amount": str(amount)} for lot_id, amount in sorted(draws.items())]}
