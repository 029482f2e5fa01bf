"""The hashes of docs/spec/engine-and-journal.md §7 and §9, computed again from its words with the reference JCS encoder.

Nothing here comes from ``ledger_engine``: these are the definitions the engine
must match, written out independently.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
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
    """"sorted rows {column_family,key,value}", "ordered by column-family UTF-8 bytes then key bytes".

    Deltas use the same row shape (the seed names none for them; docs/adr/0011); a deletion's value is null.
    """
    ordered = sorted(rows, key=lambda row: (row[0].encode(), row[1]))
    return [{"column_family": family, "key": key.decode(), "value": None if raw is None else orjson.loads(raw)}
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


@dataclass(frozen=True)
class AuditedExport:
    sequence: int
    logical_state_hash: str
    rows: int
    events: int


def _jsonl(path: Path) -> list[Any]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def audit_export(directory: Path) -> AuditedExport:
    """Check an export from the seed's definitions only, asserting on the first difference.

    "For each committed outcome, compute delta_hash ... of the sorted delta": each line of
    deltas.jsonl (0 is genesis) must hash to its journal entry's delta_hash, and applying the
    deltas in sequence ("canonical set operations", null deleting) must give exactly the exported
    state rows and events, whose digest is the metadata's logical_state_hash.
    """
    metadata = orjson.loads((directory / "metadata.json").read_bytes())
    journal, deltas = _jsonl(directory / "journal.jsonl"), _jsonl(directory / "deltas.jsonl")
    assert [delta["sequence"] for delta in deltas] == list(range(len(journal) + 1))
    previous = GENESIS_PREVIOUS_HASH
    for entry, delta in zip(journal, deltas[1:]):
        assert entry["previous_entry_hash"] == previous and entry["entry_hash"] == entry_hash(entry)
        assert delta_hash(delta["delta"]) == entry["delta_hash"], entry["sequence"]
        previous = entry["entry_hash"]
    state: dict[tuple[str, str], Any] = {}
    for delta in deltas:
        for row in delta["delta"]:
            assert row["column_family"] in DELTA_FAMILIES
            if row["value"] is None:
                state.pop((row["column_family"], row["key"]), None)
            else:
                state[(row["column_family"], row["key"])] = row["value"]
    events = [{"key": key, "value": value} for (family, key), value in sorted(state.items()) if family == "events"]
    rows = [{"column_family": family, "key": key, "value": value}
            for (family, key), value in sorted(state.items(), key=lambda item: (item[0][0].encode(), item[0][1].encode()))
            if family in STATE_FAMILIES]
    assert rows == _jsonl(directory / "state_rows.jsonl")
    assert events == _jsonl(directory / "events.jsonl")
    digest = prefixed_hash(STATE_PREFIX, rows)
    assert (previous, digest) == (metadata["last_entry_hash"], metadata["logical_state_hash"])
    return AuditedExport(len(journal), digest, len(rows), len(events))
