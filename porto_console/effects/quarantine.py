"""Quarantined effects: ones whose work failed permanently, parked until an operator retries them.

Only permanent failures come here (a rule the ledger or the chain refused, a
malformed record); transient ones are retried by the workers themselves.
Each entry names its ``cause`` (what kind of failure) and its ``reason``
(the error itself), which the console's quarantine screen shows.

The sweep never dispatches a quarantined effect. Each entry is one small
JSON file in the quarantine directory (``PORTO_QUARANTINE_DIR``), which the
workers and the console share on the ledger host, or one row in PostgreSQL
(``PORTO_SIGNER_JOURNAL_URL``, ``pg_quarantine``) for signers on other
hosts; the ledger's own record of
the effect is untouched, so a retry continues from whatever the ledger says.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import orjson

from ledger_engine.envelope import IDENTIFIER_PATTERN

_EFFECT_ID = re.compile(IDENTIFIER_PATTERN)


def checked_effect_id(effect_id: str) -> str:
    if not _EFFECT_ID.fullmatch(effect_id):
        raise ValueError(f"not an effect ID: {effect_id!r}")
    return effect_id


def new_entry(effect_id: str, kind: str, reason: str, retries: int, cause: str) -> dict[str, Any]:
    return {"effect_id": effect_id, "kind": kind, "cause": cause[:200], "reason": reason[:2000],
            "retries": retries, "quarantined_at_ms": time.time_ns() // 1_000_000}


class Quarantine:
    """The directory adapter of ``journal_port.QuarantinePort``; ``pg_quarantine`` is the PostgreSQL one."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)

    def add(self, effect_id: str, kind: str, reason: str, retries: int, *,
            cause: str = "refused rule") -> dict[str, Any]:
        entry = new_entry(checked_effect_id(effect_id), kind, reason, retries, cause)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(effect_id)
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(orjson.dumps(entry))
        os.replace(temporary, path)
        return entry

    def contains(self, effect_id: str) -> bool:
        return self._path(effect_id).exists()

    def entries(self) -> list[dict[str, Any]]:
        """Every quarantined effect, oldest first."""
        if not self.directory.exists():
            return []
        found = [orjson.loads(path.read_bytes()) for path in self.directory.glob("*.json")]
        return sorted(found, key=lambda entry: (entry["quarantined_at_ms"], entry["effect_id"]))

    def release(self, effect_id: str) -> dict[str, Any] | None:
        """Take an effect out of quarantine; returns its entry, or None if it was not there."""
        path = self._path(effect_id)
        try:
            entry = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        path.unlink(missing_ok=True)
        return entry

    def _path(self, effect_id: str) -> Path:
        return self.directory / f"{checked_effect_id(effect_id)}.json"
