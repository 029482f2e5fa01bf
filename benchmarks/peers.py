"""Peers: engine ImportFunding against django-hordak and eventsourcing on PostgreSQL, 1 and 64 per commit.

Every side records the same deposits (benchmarks/peer_harness.py). The engine
imports each as a funding lot (``ImportFunding``: the lot, its two unique
claims, the treasury and funding postings, the journal entry), one durable
``submit`` at a time or 64 in flight (group commit); django-hordak makes one
``transfer_to`` per deposit, one per database transaction or 64; eventsourcing
saves one new aggregate per deposit, one per ``save`` or 64. PostgreSQL must
report ``synchronous_commit`` and ``fsync`` on over each peer's own connection,
before and after the rounds, or the benchmark fails; so does a peer that
cannot run.

Rounds go engine, hordak, eventsourcing, eventsourcing, hordak, engine (ABBA
for each pair), so a slow minute on the shared disk hits every side; each
ratio is taken within one such cycle and the median over cycles is shown.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from benchmarks.measure import WriteProbe, seconds
from benchmarks.peer_harness import (
    DATABASES, Deposit, PeerProcess, database_url, deposits, server_url, total_amount,
)
from benchmarks.report import Report
from benchmarks.workload import SEED, Envelope, check_committed, open_ledger, submit_each, submit_windowed
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.demo.builder import DemoBuilder
from ledger_engine.demo.foundation import INGEST, build_foundation
from ledger_engine.domain.chart import TREASURY
from ledger_engine.selectors.money_queries import balance

GROUP = 64
MODE_NAMES = {1: "one per commit", GROUP: f"{GROUP} per commit"}
TARGETS = {"hordak": 5.0, "eventsourcing": 1.5}
PEER_PACKAGES = {"hordak": "django-hordak", "eventsourcing": "eventsourcing"}
ENGINE = "engine"
CYCLE_ORDER = (ENGINE, "hordak", "eventsourcing", "eventsourcing", "hordak", ENGINE)


@dataclass(frozen=True)
class Plan:
    """How many cycles, and how many deposits each side records per round and in its warm-up, by mode."""

    cycles: int = 4
    per_round: dict[int, int] = field(default_factory=lambda: {1: 150, GROUP: 640})
    warm_up: dict[int, int] = field(default_factory=lambda: {1: 30, GROUP: 128})


class EngineSide:
    """The ledger engine in this process: the demo's staff, workers and catalogue, then one lot per deposit."""

    def __init__(self, report: Report, path: Path) -> None:
        self.builder = DemoBuilder(SEED)
        build_foundation(self.builder, listeners=0, days=1)
        self.owner = open_ledger(path)
        prelude = list(self.builder.envelopes)
        check_committed(report, self.owner, submit_windowed(self.owner, prelude, depth=256), len(prelude))
        self.prelude = len(prelude)
        self.treasury_before = balance(self.owner.view(), TREASURY, "USDC").debits
        self.outcomes: list[CommandOutcome] = []
        self.batches: dict[int, list[int]] = {}  # per commit -> bytes of each synchronous batch written
        self.recorded: dict[int, int] = {}  # per commit -> deposits recorded

    def record(self, first: int, count: int, per_commit: int) -> float:
        def submit() -> None:
            envelopes = [self._import_funding(deposit) for deposit in deposits(first, count)]
            if per_commit == 1:
                self.outcomes.extend(submit_each(self.owner, envelopes))
            else:
                self.outcomes.extend(submit_windowed(self.owner, envelopes, depth=per_commit))

        with WriteProbe(self.owner.store) as probe:
            took = seconds(submit)
        self.batches.setdefault(per_commit, []).extend(probe.batches)
        self.recorded[per_commit] = self.recorded.get(per_commit, 0) + count
        return took

    def report_batches(self, report: Report) -> None:
        """How many deposits shared each fsync, and how many bytes each deposit wrote."""
        for per_commit, batches in self.batches.items():
            mode, prefix = MODE_NAMES[per_commit], f"per_commit_{per_commit}_engine_"
            recorded = self.recorded[per_commit]
            report.metric(prefix + "commands_per_fsync", f"{mode}: engine, commands per fsync",
                          recorded / len(batches), "commands")
            report.metric(prefix + "bytes_per_command", f"{mode}: engine, batch bytes per command",
                          sum(batches) / recorded, "bytes")

    def check(self, report: Report, recorded: int) -> None:
        check_committed(report, self.owner, self.outcomes, self.prelude + recorded)
        debited = balance(self.owner.view(), TREASURY, "USDC").debits - self.treasury_before
        report.check(debited == total_amount(0, recorded),
                     f"engine: treasury debited {debited} micro-units, the sum of the {recorded} deposits")

    def close(self) -> None:
        self.owner.close()

    def _import_funding(self, deposit: Deposit) -> Envelope:
        details = deposit.as_dict()
        return self.builder.add("ImportFunding", {
            "lot_id": details.pop("lot_id"), "asset": "USDC", "amount": str(details.pop("amount")),
            "deposit": details}, actor=INGEST, evidence=[deposit.evidence_digest])


@dataclass
class Side:
    """One side's rounds in one mode, grouped by cycle: (deposits, seconds) for each round."""

    name: str
    cycles: list[list[tuple[int, float]]] = field(default_factory=list)

    def rate(self, cycle: int) -> float:
        rounds = self.cycles[cycle]
        return sum(count for count, _ in rounds) / sum(took for _, took in rounds)

    def per_op_us(self) -> float:
        return statistics.median(took / count * 1e6 for rounds in self.cycles for count, took in rounds)


class Runner:
    """Hands every side its next deposits (the same ones for each side) and keeps their rounds."""

    def __init__(self, plan: Plan, engine: EngineSide, peers: dict[str, PeerProcess]) -> None:
        self.plan, self.engine, self.peers = plan, engine, peers
        self.recorded = {name: 0 for name in (ENGINE, *peers)}

    def round(self, name: str, count: int, per_commit: int) -> tuple[int, float]:
        first = self.recorded[name]
        if name == ENGINE:
            took = self.engine.record(first, count, per_commit)
        else:
            took = self.peers[name].call("record", first=first, count=count, per_commit=per_commit)
        self.recorded[name] += count
        return count, took

    def mode(self, per_commit: int) -> dict[str, Side]:
        sides = {name: Side(name) for name in self.recorded}
        for name in sides:
            self.round(name, self.plan.warm_up[per_commit], per_commit)
        for _ in range(self.plan.cycles):
            for side in sides.values():
                side.cycles.append([])
            for name in CYCLE_ORDER:
                sides[name].cycles[-1].append(self.round(name, self.plan.per_round[per_commit], per_commit))
        return sides


def run(report: Report, workdir: Path) -> None:
    server = server_url()
    compare(report, workdir, {name: database_url(server, database) for name, database in DATABASES.items()})


def compare(report: Report, workdir: Path, urls: dict[str, str], plan: Plan = Plan()) -> None:
    """Run ``plan`` against the peers' databases at ``urls`` (emptied first) and a fresh ledger in ``workdir``."""
    with PeerProcess("hordak", urls["hordak"]) as hordak, \
            PeerProcess("eventsourcing", urls["eventsourcing"]) as eventsourcing:
        peers = {"hordak": hordak, "eventsourcing": eventsourcing}
        for peer in peers.values():
            peer.call("reset")
        _check_durable(report, peers, "before the rounds")
        engine = EngineSide(report, workdir / "ledger")
        try:
            runner = Runner(plan, engine, peers)
            results = {per_commit: runner.mode(per_commit) for per_commit in MODE_NAMES}
            _check_durable(report, peers, "after the rounds")
            engine.check(report, runner.recorded[ENGINE])
            _check_stored(report, peers, runner.recorded)
        finally:
            engine.close()
    for per_commit, sides in results.items():
        _report_mode(report, plan, per_commit, sides)
    engine.report_batches(report)
    report.facts["peer_versions"] = {name: version(package) for name, package in PEER_PACKAGES.items()}
    report.facts["postgres_databases"] = urls


def _check_durable(report: Report, peers: dict[str, PeerProcess], when: str) -> None:
    """Each peer's connection raises ``NotDurable`` itself unless every setting is on; this records what it saw."""
    for name, peer in peers.items():
        settings = peer.call("durability")
        report.check(all(value == "on" for value in settings.values()),
                     f"{name}: PostgreSQL {', '.join(f'{k} = {v}' for k, v in settings.items())} {when}")


def _check_stored(report: Report, peers: dict[str, PeerProcess], recorded: dict[str, int]) -> None:
    hordak = peers["hordak"].call("stored")
    expected = recorded["hordak"]
    report.check(hordak == {"transactions": expected, "legs": 2 * expected,
                            "treasury_debited": total_amount(0, expected)},
                 f"hordak: {expected} transactions of two legs, the treasury debited the sum of the deposits")
    events = peers["eventsourcing"].call("stored")
    expected = recorded["eventsourcing"]
    report.check(events == {"events": expected, "lots": expected},
                 f"eventsourcing: {expected} events stored, one for each of {expected} aggregates")


def _report_mode(report: Report, plan: Plan, per_commit: int, sides: dict[str, Side]) -> None:
    mode, prefix = MODE_NAMES[per_commit], f"per_commit_{per_commit}_"
    engine = sides[ENGINE]
    for name, side in sides.items():
        report.metric(f"{prefix}{name}_us", f"{mode}: {name}, one deposit (median round)", side.per_op_us(), "µs")
    for name, threshold in TARGETS.items():
        ratios = [engine.rate(cycle) / sides[name].rate(cycle) for cycle in range(plan.cycles)]
        ratio = statistics.median(ratios)
        report.metric(f"{prefix}engine_over_{name}", f"{mode}: engine / {name} (median of {plan.cycles} cycles)",
                      ratio, "x")
        report.facts[f"{prefix}engine_over_{name}_by_cycle"] = [round(value, 3) for value in ratios]
        report.target(f"{mode}: engine >= {threshold:g}x {name}", ratio, threshold, "x")
    report.facts[f"{prefix}deposits_per_round"] = plan.per_round[per_commit]
