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

The directory is shared, so an entry may be unreadable (truncated, edited by
hand, written by another version): it is listed as damaged, saying why,
never allowed to hide the others. Retrying a damaged entry whose file names
an effect releases that effect like any other.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import orjson

from ledger_engine.envelope import IDENTIFIER_PATTERN
from ledger_engine.open_json import Report

_EFFECT_ID = re.compile(IDENTIFIER_PATTERN)


def checked_effect_id(effect_id: str) -> str:
    if not _EFFECT_ID.fullmatch(effect_id):
        raise ValueError(f"not an effect ID: {effect_id!r}")
    return effect_id


# What every entry holds, and of which type; ``cause`` is optional (entries older than causes lack it).
ENTRY_FIELDS = {"effect_id": str, "kind": str, "reason": str, "retries": int, "quarantined_at_ms": int}
DAMAGED = "damaged entry"


def readable_entry(stored: Any, name: str) -> Report:
    """``stored`` (an entry's bytes or decoded value) as an entry, or a damaged entry saying why it is not one."""
    try:
        entry = orjson.loads(stored) if isinstance(stored, (bytes, str)) else stored
    except orjson.JSONDecodeError as error:
        return damaged_entry(name, f"not JSON ({error})")
    problem = _shape_problem(entry, name)
    return entry if problem is None else damaged_entry(name, problem)


def damaged_entry(name: str, why: str) -> Report:
    """An entry nobody can read: listed first, retried under the effect ID its name holds, if it holds one."""
    return {"effect_id": name if _EFFECT_ID.fullmatch(name) else None, "kind": DAMAGED, "cause": DAMAGED,
            "reason": f"{name}: {why}"[:2000], "retries": 0, "quarantined_at_ms": 0, "damaged": True}


def _shape_problem(entry: Any, name: str) -> str | None:
    if not isinstance(entry, dict):
        return f"holds {type(entry).__name__}, not an entry"
    for field, kind in ENTRY_FIELDS.items():
        if not isinstance(entry.get(field), kind) or isinstance(entry.get(field), bool):
            return f"{field} is missing or not {kind.__name__}"
    if entry["effect_id"] != name:
        return f"names effect {entry['effect_id']!r}"
    return None


def new_entry(effect_id: str, kind: str, reason: str, retries: int, cause: str) -> Report:
    return {"effect_id": effect_id, "kind": kind, "cause": cause[:200], "reason": reason[:2000],
            "retries": retries, "quarantined_at_ms": time.time_ns() // 1_000_000}


class Quarantine:
    """The directory adapter of ``journal_port.QuarantinePort``; ``pg_quarantine`` is the PostgreSQL one."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)

    def add(self, effect_id: str, kind: str, reason: str, retries: int, *,
            cause: str = "refused rule") -> Report:
        entry = new_entry(checked_effect_id(effect_id), kind, reason, retries, cause)
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self._path(effect_id)
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(orjson.dumps(entry))
        os.replace(temporary, path)
        return entry

    def contains(self, effect_id: str) -> bool:
        return self._path(effect_id).exists()

    def entries(self) -> list[Report]:
        """Every quarantined effect, oldest first."""
        if not self.directory.exists():
            return []
        found = [self._read(path) for path in self.directory.glob("*.json")]
        return sorted(found, key=lambda entry: (entry["quarantined_at_ms"], entry["effect_id"] or ""))

    def release(self, effect_id: str) -> Report | None:
        """Take an effect out of quarantine; returns its entry, or None if it was not there."""
        path = self._path(effect_id)
        try:
            stored = path.read_bytes()
        except FileNotFoundError:
            return None
        path.unlink(missing_ok=True)
        return readable_entry(stored, path.stem)

    @staticmethod
    def _read(path: Path) -> Report:
        try:
            return readable_entry(path.read_bytes(), path.stem)
        except OSError as error:
            return damaged_entry(path.stem, f"unreadable ({error.strerror or error})")

    def _path(self, effect_id: str) -> Path:
        return self.directory / f"{checked_effect_id(effect_id)}.json"
