"""Command metrics, fed by the executor's observer interface (``ledger_engine/application/observers.py``).

``porto_commands_total`` counts commands by type and outcome, the commit
latency histogram times each from joining the executor's queue to its durable
answer, and the group size histogram counts the commands that shared one
synchronous write. ``REGISTRY`` is the console's own registry, which
``/metrics`` serves.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from ledger_engine.application.observers import GroupReport
from ledger_engine.application.owner import LedgerOwner

REGISTRY = CollectorRegistry()

COMMANDS = Counter("porto_commands", "Commands the ledger answered, by command type and outcome",
                   ["command_type", "outcome"], registry=REGISTRY)
COMMIT_SECONDS = Histogram("porto_command_commit_seconds",
                           "Seconds from a command joining the executor's queue to its durable answer",
                           buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
                           registry=REGISTRY)
GROUP_SIZE = Histogram("porto_commit_group_size", "Commands answered together in one group commit",
                       buckets=(1, 2, 4, 8, 16, 32, 64), registry=REGISTRY)


def record(report: GroupReport) -> None:
    for command in report.commands:
        COMMANDS.labels(command.command_type, command.outcome).inc()
        COMMIT_SECONDS.observe(command.latency_s)
    GROUP_SIZE.observe(report.size)


def observe_commands(owner: LedgerOwner) -> None:
    owner.add_command_listener(record)
