"""The console process's ledger owner and admission gateway: opened once, shared by every request thread.

The launcher (``scripts/run_console.py``) opens them before serving, so a
second server process against the same data directory fails at start with
``LEDGER_ALREADY_OWNED``. Every command of this process (console forms and the
internal API alike) goes through ``gateway()``, which stores its envelope
before submitting it and, after commit, announces the effects it created to the
workers. Every read that a screen shows goes through ``read_view``: a selector,
or a service composing selectors, on a ``LedgerView`` between two commands,
paired with the head it was read at. ``read_settled`` reads off the command
thread what needs no boundary.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, TypeVar

from django.conf import settings

from ledger_engine.adapters.gateway import CommandGateway, Queued
from ledger_engine.application import day_freeze
from ledger_engine.storage.head import Head
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.errors import LedgerError
from ledger_engine.open_json import Document, Unvalidated
from ledger_engine.selectors.view import LedgerView
from ledger_engine.selectors import effect_queries
from porto_console.effects import delivery
from porto_console.operations.command_metrics import observe_commands

log = logging.getLogger("porto.console.ledger")

T = TypeVar("T")

_lock = threading.Lock()
_owner: LedgerOwner | None = None
_gateway: AnnouncingGateway | None = None
_opened_at_ms = 0


def open_owner(data_dir: Path | None = None, *, genesis: Document | None = None) -> LedgerOwner:
    """Open this process's owner; fails with LEDGER_ALREADY_OWNED if another process holds it.

    The gateway's store lives beside an explicitly given ledger directory, or at
    ``ADMISSION_DIR`` for the configured one.
    """
    global _owner, _gateway, _opened_at_ms
    with _lock:
        if _owner is None:
            _owner = LedgerOwner.open(data_dir or settings.LEDGER_DATA_DIR, genesis=genesis)
            _opened_at_ms = time.time_ns() // 1_000_000
            observe_commands(_owner)
            admission = Path(data_dir).parent / "admission" if data_dir else settings.ADMISSION_DIR
            _gateway = AnnouncingGateway(_owner, admission)
            if settings.DAY_ALLOCATION_IN_BACKGROUND and day_freeze.unfinished_requests(_owner):
                day_freeze.start_in_background(_owner, _gateway.evidence)  # where a restart left them
        return _owner


class AnnouncingGateway(CommandGateway):
    """The admission gateway that tells the workers about the effects a command created, once it has committed.

    An announcement only saves time: when it is off or fails, the beat sweep
    finds the pending effect later. So a failure is logged, never raised: the
    command has committed and its outcome stands.
    """

    ledger: LedgerOwner

    def submit(self, envelope: Unvalidated) -> CommandOutcome:
        outcome = super().submit(envelope)
        self._announce_created(outcome)
        return outcome

    def answers(self, queued: Queued) -> list[CommandOutcome | LedgerError]:
        answers = super().answers(queued)
        for answer in answers:
            if isinstance(answer, CommandOutcome):
                self._announce_created(answer)
        return answers

    def _announce_created(self, outcome: CommandOutcome) -> None:
        if outcome.accepted and outcome.new_effects and settings.EFFECTS_ENABLED:
            try:
                self._announce(outcome.new_effects)
            except Exception:
                log.exception("announcing effects %s failed; the sweep will send them",
                              ", ".join(outcome.new_effects))

    def _announce(self, effect_ids: tuple[str, ...]) -> None:
        state = self.ledger.dispatch_state()
        if not state["enabled"]:
            log.info("dispatch disabled (%s): not announcing %s", state["reason"], ", ".join(effect_ids))
            return
        view = self.ledger.view()
        # Each effect as the internal API lists it, with the revision a claim must name.
        listed = (effect_queries.effect(view, effect_id) for effect_id in effect_ids)
        delivery.announce([effect for effect in listed if effect is not None])


def owner() -> LedgerOwner:
    return _owner if _owner is not None else open_owner()


def opened_at_ms() -> int:
    """When this process opened its owner (ms since the epoch): the health check's grace for a first backup."""
    return _opened_at_ms


def gateway() -> AnnouncingGateway:
    owner()
    assert _gateway is not None  # opened with the owner
    return _gateway


def close_owner() -> None:
    global _owner, _gateway
    with _lock:
        if _owner is not None:
            _owner.close()
            _owner = _gateway = None


@dataclass(frozen=True, slots=True)
class LedgerRead(Generic[T]):
    """Data read from the ledger and the head it was read at."""

    head: Head
    data: T


def read_view(read: Callable[[LedgerView], T]) -> LedgerRead[T]:
    """``read`` on a view of the ledger between two commands, with the head it was read at: a selector, or a
    service composing selectors."""
    return owner().read(lambda view: LedgerRead(view.head, read(view)))


def read_settled(read: Callable[[LedgerView], T]) -> T:
    """``read`` on a view of the live store, off the command thread, for what needs no boundary: what no later
    command changes (journal entries and what each wrote, up to the view's head), or a single point read. A long
    read (a range check, an export) so never holds up the commands behind it."""
    return read(owner().view())
