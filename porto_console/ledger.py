"""The console process's ledger owner: opened once, shared by every request thread."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from django.conf import settings

from ledger_engine.application.owner import LedgerOwner

_lock = threading.Lock()
_owner: LedgerOwner | None = None


def open_owner(data_dir: Path | None = None, *, genesis: dict[str, Any] | None = None) -> LedgerOwner:
    """Open this process's owner; fails with LEDGER_ALREADY_OWNED if another process holds it."""
    global _owner
    with _lock:
        if _owner is None:
            _owner = LedgerOwner.open(data_dir or settings.LEDGER_DATA_DIR, genesis=genesis)
        return _owner


def owner() -> LedgerOwner:
    return _owner if _owner is not None else open_owner()


def close_owner() -> None:
    global _owner
    with _lock:
        if _owner is not None:
            _owner.close()
            _owner = None
