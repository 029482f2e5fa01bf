"""The console process's ledger owner and admission gateway: opened once, shared by every request thread.

The launcher (``scripts/run_console.py``) opens them before serving, so a
second server process against the same data directory fails at start with
``LEDGER_ALREADY_OWNED``. Every command goes through the gateway, which
stores its envelope before submitting it. Every read that a screen shows goes
through ``read_at_boundary``, which pairs the data with the head it was read at.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

from django.conf import settings

from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.application.journal import Head
from ledger_engine.application.owner import LedgerOwner

T = TypeVar("T")

_lock = threading.Lock()
_owner: LedgerOwner | None = None
_gateway: CommandGateway | None = None


def open_owner(data_dir: Path | None = None, *, genesis: dict[str, Any] | None = None) -> LedgerOwner:
    """Open this process's owner; fails with LEDGER_ALREADY_OWNED if another process holds it.

    The gateway's store lives beside an explicitly given ledger directory, or at
    ``ADMISSION_DIR`` for the configured one.
    """
    global _owner, _gateway
    with _lock:
        if _owner is None:
            _owner = LedgerOwner.open(data_dir or settings.LEDGER_DATA_DIR, genesis=genesis)
            admission = Path(data_dir).parent / "admission" if data_dir else settings.ADMISSION_DIR
            _gateway = CommandGateway(_owner, admission)
        return _owner


def owner() -> LedgerOwner:
    return _owner if _owner is not None else open_owner()


def gateway() -> CommandGateway:
    owner()
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


def read_at_boundary(read: Callable[[LedgerOwner], T]) -> LedgerRead[T]:
    """Run ``read`` between two commands, so the data and the head belong together.

    Scans read the live database (docs/adr/0002); on the executor thread no
    command can commit while they run.
    """
    ledger = owner()
    return ledger.at_boundary(lambda _store: LedgerRead(ledger.head(), read(ledger)))
