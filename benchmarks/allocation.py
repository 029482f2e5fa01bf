"""Allocation: AllocateListenerDay for listener-days of 20 works and 3 nodes, with group commit.

The target population is 10,000 listeners by 30 days. Allocating it whole
takes many minutes, so this measures a sample of listener-days of exactly that
shape (every listener-day costs the same whatever the population) and projects
the time for the whole population from the measured rate.

It also times the policy's floor on the same listener-days, outside any
command: planning a day (reading its records and splitting it) and the
``london-1`` split alone. Whatever stores the lines, a design that runs the
split for every listener-day inside one serial executor spends at least
``population x split`` there (docs/adr/0069).

``MoneyLedger`` builds that shape for the other money benchmarks too: 40
artists, 20 works with one or two rights holders each, one cleared period and
funded budget per listener, and closed listener-days. Periods and closed days
belong to the streaming domain; they are written through the test suite's
``TestStreamingRecords`` stand-in command, registered for the run.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from pathlib import Path
from typing import Any, Iterator

from benchmarks.measure import seconds
from benchmarks.report import Report
from benchmarks.workload import submit_windowed
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.pending import PendingBatch
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.commands.money.allocation import POLICY_KEY, listener_day_inputs
from ledger_engine.domain.commands.money.lines import budget_key
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.domain.schema.streaming import listener_day_key
from ledger_engine.domain.view import StateView
from ledger_engine.genesis import default_genesis
from ledger_engine.layout import STATE
from ledger_engine.selectors.money_queries import allocation_plan, conservation_report
from tests.conftest import EnvelopeFactory
from tests.money_allocation.world import FINANCE, FIRST_DAY, INGEST, MoneyWorld, fixture_commands, funding
from tests.support import payloads

WORKS, ARTISTS, NODES = 20, 40, 3
BUDGET = 30 * 10**6  # 30 USDC per listener: one USDC a day
RECORDS_PER_COMMAND = 250
DEPTH = 64
POPULATION = 10_000 * 30

SAMPLE_LISTENERS, SAMPLE_DAYS = 100, 30
ROUNDS = 5


class MoneyLedger:
    """A ledger with ``listeners`` funded periods of ``days`` closed listener-days each, allocated on demand."""

    def __init__(self, owner: LedgerOwner, listeners: int, days: int) -> None:
        self.owner, self.listeners, self.days = owner, listeners, days
        self.envelopes = EnvelopeFactory()
        self.world = MoneyWorld(owner, self.envelopes)
        self.line_ids = (f"line-{n:09d}" for n in itertools.count())
        self.allocated_days = 0
        self.lines_per_day = 0

    @classmethod
    @contextlib.contextmanager
    def open(cls, path: Path, listeners: int, days: int) -> Iterator["MoneyLedger"]:
        with fixture_commands(), LedgerOwner.open(path, genesis=default_genesis()) as owner:
            ledger = cls(owner, listeners, days)
            ledger.build()
            yield ledger

    def build(self) -> None:
        world, envelopes = self.world, self.envelopes
        for envelope in (envelopes.account(INGEST, "worker", ["ingest"]), envelopes.account(FINANCE, roles=["finance"])):
            world.owner.submit(envelope)
        artists = [f"artist-{n:02d}" for n in range(ARTISTS)]
        for artist in artists:
            world.owner.submit(envelopes.account(artist, "artist", payout_address=payloads.address(artist)))
        works = [f"work-{n:02d}" for n in range(WORKS)]
        world.submit_ok("ImportCatalogue", payloads.catalogue("catalogue", *map(payloads.work, works)), actor=INGEST)
        for number, work_id in enumerate(works):
            holders = sorted(artists[(2 * number + k) % ARTISTS] for k in range(1 + number % 2))
            splits = dict(zip(holders, (6_000, 4_000))) if len(holders) == 2 else {holders[0]: 10_000}
            world.submit_ok("ActivateWork", payloads.rights(work_id, splits), actor=INGEST)
        world.lot("lot-1", BUDGET * self.listeners)
        self._periods_and_budgets()
        self._closed_days(works)

    def _periods_and_budgets(self) -> None:
        for chunk in _chunks(range(self.listeners), RECORDS_PER_COMMAND):
            self.world.submit_ok("TestStreamingRecords", {"periods": [{
                "period_id": f"period-{n}", "account_id": f"listener-{n}", "start_ms": FIRST_DAY * DAY_MS,
                "end_ms": (FIRST_DAY + 30) * DAY_MS, "days": 30} for n in chunk]})
            self.world.submit_ok("ImportFunding", {"budgets": [
                funding(f"budget-{n}", f"period-{n}", {"lot-1": BUDGET}) for n in chunk]}, actor=INGEST)

    def _closed_days(self, works: list[str]) -> None:
        days = [{"listener_id": f"listener-{n}", "day": FIRST_DAY + d, "period_id": f"period-{n}",
                 "works": [{"work_id": w, "rights_version": 1, "listened_ms": 20_000 + 3_000 * i + d}
                           for i, w in enumerate(works)],
                 "nodes": [{"node_id": f"node-{k}", "operator_id": f"operator-{k}", "served_bytes": 10**6 * (k + 1) + d}
                           for k in range(NODES)]}
                for d in range(self.days) for n in range(self.listeners)]
        for chunk in _chunks(days, RECORDS_PER_COMMAND):
            self.world.submit_ok("TestStreamingRecords", {"days": chunk})

    def next_allocations(self, count: int) -> list[dict[str, Any]]:
        """Envelopes for the next ``count`` listener-days, day by day across listeners.

        All listeners' day ``d`` share one shape and budget, so one plan gives every one's line count."""
        envelopes = []
        for position in range(self.allocated_days, self.allocated_days + count):
            day_index, listener = divmod(position, self.listeners)
            day = FIRST_DAY + day_index
            if listener == 0:
                self.lines_per_day = len(allocation_plan(self.owner.view(), "listener-0", day, "budget-0").lines)
            revisions = {listener_day_key(f"listener-{listener}", day): 1, POLICY_KEY: 1,
                         budget_key(f"budget-{listener}"): 1 + day_index}
            envelopes.append(self.envelopes("AllocateListenerDay", {
                "listener_id": f"listener-{listener}", "day": day, "budget_id": f"budget-{listener}",
                "line_ids": [next(self.line_ids) for _ in range(self.lines_per_day)],
            }, actor=FINANCE, expected=[{"cf": STATE, "key": k, "revision": r} for k, r in sorted(revisions.items())]))
        self.allocated_days += count
        return envelopes

    def allocate_envelopes(self, envelopes: list[dict[str, Any]]) -> list[CommandOutcome]:
        return submit_windowed(self.owner, envelopes, DEPTH)


def _policy_floor(view: StateView, listeners: int) -> tuple[float, float]:
    """CPU µs per listener-day to plan a sample of day 1's listener-days, and to split them again from their inputs."""
    started = time.thread_time()
    inputs = [listener_day_inputs(view, f"listener-{listener}", FIRST_DAY, f"budget-{listener}") for listener in range(listeners)]
    for planned in inputs:
        planned.split()
    plan_us = (time.thread_time() - started) * 1e6 / listeners
    started = time.thread_time()
    for planned in inputs:
        planned.split()
    return plan_us, (time.thread_time() - started) * 1e6 / listeners


def _chunks(items, size: int):
    items = list(items)
    return [items[start:start + size] for start in range(0, len(items), size)]


def check_allocated(report: Report, ledger: MoneyLedger, outcomes: list[CommandOutcome]) -> None:
    refused = [o for o in outcomes if not o.accepted]
    report.check(not refused, f"all {len(outcomes)} allocations accepted"
                 + (f" (first refused: {refused[0].code} {refused[0].result})" if refused else ""))


def run(report: Report, workdir: Path) -> None:
    per_round = SAMPLE_LISTENERS * SAMPLE_DAYS // ROUNDS
    with MoneyLedger.open(workdir / "ledger", SAMPLE_LISTENERS, SAMPLE_DAYS) as ledger:
        outcomes, rates = [], []
        for _ in range(ROUNDS):
            envelopes = ledger.next_allocations(per_round)
            elapsed = seconds(lambda: outcomes.extend(ledger.allocate_envelopes(envelopes)))
            rates.append(per_round / elapsed)
        check_allocated(report, ledger, outcomes)
        lines = sum(len(o.result["data"]["line_ids"]) for o in outcomes)
        mismatches = ledger.owner.read(conservation_report)
        report.check(not mismatches, f"the full conservation check finds nothing after {len(outcomes)} allocations")
        plan_us, split_us = ledger.owner.at_boundary(lambda store: _policy_floor(PendingBatch(store), SAMPLE_LISTENERS))
    rate = sorted(rates)[len(rates) // 2]
    report.metric("listener_days_per_s", "listener-days allocated per second (median round)", rate, "days/s")
    report.metric("lines_per_day", "allocation lines per listener-day", lines / len(outcomes), "lines")
    report.metric("lines_per_s", "allocation lines written per second", rate * lines / len(outcomes), "lines/s")
    report.metric("projected_s", "projected time for 10,000 listeners x 30 days", POPULATION / rate, "s")
    report.metric("plan_us", "planning one listener-day outside a command (reads and split), CPU", plan_us, "µs")
    report.metric("split_us", "the london-1 split of one listener-day alone, CPU", split_us, "µs")
    report.metric("split_floor_s", "the split alone for 10,000 listeners x 30 days, on one core", POPULATION * split_us / 1e6,
                  "s")
    report.note(f"   measured on {len(outcomes):,} listener-days ({SAMPLE_LISTENERS} listeners x {SAMPLE_DAYS} days) "
                f"of the full shape, {DEPTH} commands in flight")
