"""The commands the benchmarks submit, and the ways they submit them.

Throughput benchmarks use the demo's account registrations: plentiful, each
independent of the others, and stable while later demo stages grow. Replay
uses the whole demo scenario, so it covers every kind of command there is.
"""

from __future__ import annotations

import statistics
from collections import deque
from pathlib import Path
from typing import Any, Callable

from benchmarks.measure import Floor, Rounds, WriteProbe, interleaved, seconds
from benchmarks.report import Report
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.demo import demo_envelopes, demo_genesis
from ledger_engine.demo.builder import DemoBuilder
from ledger_engine.demo.foundation import build_foundation

SEED = 20261001
SAMPLE_COMMANDS = 50

Envelope = dict[str, Any]


def registrations(count: int) -> list[Envelope]:
    """The demo foundation's first ``count`` envelopes: registrations of staff, workers, artists and listeners,
    with the staff and profile changes that follow the staff's (a prefix of a valid history is valid)."""
    builder = DemoBuilder(SEED)
    build_foundation(builder, listeners=count, days=1)
    registering = builder.envelopes[:count]
    assert len(registering) == count, "the demo foundation has fewer commands than asked for"
    return registering


def scenario(*, listeners: int, days: int, limit: int) -> list[Envelope]:
    """The demo scenario's first ``limit`` envelopes: a prefix of a valid history is valid."""
    return demo_envelopes(SEED, listeners=listeners, days=days)[:limit]


def open_ledger(path: Path) -> LedgerOwner:
    return LedgerOwner.open(path, genesis=demo_genesis())


def submit_each(owner: LedgerOwner, envelopes: list[Envelope]) -> list[CommandOutcome]:
    """One at a time: each submit returns after its own synchronous write."""
    return [owner.submit(envelope) for envelope in envelopes]


def submit_windowed(owner: LedgerOwner, envelopes: list[Envelope], depth: int) -> list[CommandOutcome]:
    """Keep ``depth`` commands in flight, so the executor always finds a queue to group."""
    outcomes: list[CommandOutcome] = []
    in_flight: deque = deque()
    for envelope in envelopes:
        in_flight.append(owner.submit_async(envelope))
        if len(in_flight) >= depth:
            outcomes.append(in_flight.popleft().result())
    outcomes.extend(future.result() for future in in_flight)
    return outcomes


def check_committed(report: Report, owner: LedgerOwner, outcomes: list[CommandOutcome], submitted: int) -> None:
    """Every command submitted so far took its own sequence and was accepted."""
    report.check(owner.head().sequence == submitted,
                 f"head sequence {owner.head().sequence} equals the {submitted} commands submitted")
    refused = [o for o in outcomes if not o.accepted or o.duplicate]
    report.check(not refused, f"all {len(outcomes)} measured commands accepted, none a duplicate"
                 + (f" (first refused: {refused[0].code})" if refused else ""))


def warm_up(owner: LedgerOwner) -> list[CommandOutcome]:
    """Commit the first registrations one at a time, so measured rounds start on a ledger in use."""
    return submit_each(owner, registrations(SAMPLE_COMMANDS))


def next_registrations(owner: LedgerOwner, count: int) -> list[Envelope]:
    """The ``count`` registrations after those already committed to a ledger holding only registrations."""
    done = owner.head().sequence
    return registrations(done + count)[done:]


def measured_rounds(report: Report, owner: LedgerOwner, floor: Floor, *, rounds: int, per_round: int,
                    submit: Callable[[list[Envelope]], list[CommandOutcome]]) -> Rounds:
    """Alternate floor rounds with rounds of ``submit`` over new registrations, then check every commit."""
    before = owner.head().sequence
    batches = iter(next_registrations(owner, rounds * per_round)[start:start + per_round]
                   for start in range(0, rounds * per_round, per_round))
    outcomes: list[CommandOutcome] = []

    def one_round() -> float:
        batch = next(batches)
        elapsed = seconds(lambda: outcomes.extend(submit(batch)))
        return len(batch) / elapsed

    measured = interleaved(rounds, floor.rocksstore_rate, one_round)
    check_committed(report, owner, outcomes, before + rounds * per_round)
    return measured


def build_ledger(report: Report, path: Path, envelopes: list[Envelope]) -> None:
    """A stopped ledger holding ``envelopes``, committed in groups."""
    with open_ledger(path) as owner:
        outcomes = submit_windowed(owner, envelopes, depth=256)
        check_committed(report, owner, outcomes, len(envelopes))


def command_batch_bytes(report: Report, path: Path) -> int:
    """Key plus value bytes of one command's batch: the median over single commits of sample commands."""
    with open_ledger(path) as owner, WriteProbe(owner.store) as probe:
        check_committed(report, owner, warm_up(owner), SAMPLE_COMMANDS)
    report.check(len(probe.batches) == SAMPLE_COMMANDS,
                 f"{SAMPLE_COMMANDS} single commits made {len(probe.batches)} batches")
    size = int(statistics.median(probe.batches))
    report.metric("command_batch_bytes", "bytes in one command's batch (median)", size, "bytes")
    return size
