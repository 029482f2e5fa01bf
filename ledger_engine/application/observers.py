"""What the executor tells observers about each group it answered: every command's type, outcome and latency.

Observers (the console's metrics) register a callable; the engine knows
nothing about what they do with it. An observer runs on the executor's
leading thread before the group's callers are answered, so it must be quick;
one that raises is logged and ignored, because an observation must never
decide a command's fate.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable

log = logging.getLogger("porto.ledger")

# A command's outcome as an observer sees it: journalled ("accepted", "rejected"), answered from its
# stored result ("duplicate"), refused unjournalled with a code ("refused"), or lost to a halt ("halted").
OUTCOMES = ("accepted", "rejected", "duplicate", "refused", "halted")


@dataclass(frozen=True, slots=True)
class CommandReport:
    command_type: str
    outcome: str
    latency_s: float  # from joining the queue to its answer: durable, refused or halted


@dataclass(frozen=True, slots=True)
class GroupReport:
    """One group the executor led: its commands share one synchronous write, or none if none was needed."""

    commands: tuple[CommandReport, ...]

    @property
    def size(self) -> int:
        return len(self.commands)


GroupListener = Callable[[GroupReport], None]


class Listeners:
    def __init__(self) -> None:
        self._listeners: tuple[GroupListener, ...] = ()
        self._lock = threading.Lock()

    def add(self, listener: GroupListener) -> None:
        with self._lock:
            self._listeners = (*self._listeners, listener)

    def __bool__(self) -> bool:
        return bool(self._listeners)

    def notify(self, report: GroupReport) -> None:
        for listener in self._listeners:
            try:
                listener(report)
            except Exception:
                log.exception("a command observer failed; the commands' answers stand")
