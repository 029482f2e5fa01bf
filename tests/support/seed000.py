"""The hashes of seed 000, computed again from its words with the reference JCS encoder.

Nothing here comes from ``ledger_engine``: these are the definitions the engine
must match, written out independently.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterable

import orjson
import rfc8785

COMMAND_PREFIX = b"porto:london:command:v1\n"
DELTA_PREFIX = b"porto:london:delta:v1\n"
JOURNAL_PREFIX = b"porto:london:journal:v1\n"
STATE_PREFIX = b"porto:london:state:v1\n"

# "Genesis previous hash is 32 zero bytes."
GENESIS_PREVIOUS_HASH = "00" * 32

# "Delta contains only canonical set operations for logical state/unique/result/outbox records and immutable events."
DELTA_FAMILIES = ("command_result", "events", "outbox", "state", "unique")
# "Include state, unique, command_result and outbox."
STATE_FAMILIES = ("command_result", "outbox", "state", "unique")

ENTRY_FIELDS = ("sequence", "previous_entry_hash", "envelope", "outcome", "result", "delta_hash")

Rows = dict[str, dict[bytes, bytes]]  # family -> key -> stored canonical value


def prefixed_hash(prefix: bytes, value: Any) -> str:
    return hashlib.sha256(prefix + rfc8785.dumps(value)).hexdigest()


def ordered_rows(rows: Iterable[tuple[str, bytes, bytes | None]]) -> list[dict[str, Any]]:
    """``{cf, key, value}`` objects ordered by column-family name, then key; a deletion's value is null."""
    ordered = sorted(rows, key=lambda row: (row[0].encode(), row[1]))
    return [{"cf": family, "key": key.decode(), "value": None if raw is None else orjson.loads(raw)}
            for family, key, raw in ordered]


def delta_rows(before: Rows, after: Rows) -> list[dict[str, Any]]:
    """The set operations that turned ``before`` into ``after`` in the delta families."""
    operations = []
    for family in DELTA_FAMILIES:
        old, new = before[family], after[family]
        for key in old.keys() | new.keys():
            if old.get(key) != new.get(key):
                operations.append((family, key, new.get(key)))
    return ordered_rows(operations)


def delta_hash(rows: list[dict[str, Any]]) -> str:
    return prefixed_hash(DELTA_PREFIX, rows)


def entry_hash(entry: dict[str, Any]) -> str:
    return prefixed_hash(JOURNAL_PREFIX, {name: entry[name] for name in ENTRY_FIELDS})


def envelope_hash(envelope: dict[str, Any]) -> str:
    return prefixed_hash(COMMAND_PREFIX, envelope)


def logical_state_hash(rows: Rows) -> str:
    return prefixed_hash(STATE_PREFIX, ordered_rows(
        (family, key, value) for family in STATE_FAMILIES for key, value in rows[family].items()))
