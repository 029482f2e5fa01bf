"""The hash chain: delta hashes, journal entries and the head (seed 000, "Journal chain")."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Iterable

from ledger_engine.canonical import DELTA_DOMAIN, JOURNAL_DOMAIN, ZERO_HASH, canonical_bytes, domain_hash

# (family, key, canonical value bytes or None for a deletion)
DeltaRow = tuple[str, str, bytes | None]


@dataclass(frozen=True, slots=True)
class Head:
    sequence: int
    entry_hash: str

    def as_json(self) -> dict[str, Any]:
        return {"sequence": self.sequence, "entry_hash": self.entry_hash}


GENESIS_HEAD = Head(0, ZERO_HASH)


def canonical_rows(rows: Iterable[DeltaRow]) -> Iterable[bytes]:
    """JCS of ``[{"cf", "key", "value"}, ...]`` in pieces, reusing each value's canonical bytes.

    Row objects have the keys cf < key < value, which is their JCS order, so the
    concatenation is byte-equal to encoding the whole array at once.
    """
    yield b"["
    separator = b""
    for family, key, value in rows:
        yield separator
        yield row_bytes(family, key, value)
        separator = b","
    yield b"]"


def row_bytes(family: str, key: str, value: bytes | None) -> bytes:
    """JCS of one ``{"cf", "key", "value"}`` row, given the value's canonical bytes."""
    return (b'{"cf":' + canonical_bytes(family) + b',"key":' + canonical_bytes(key) + b',"value":'
            + (value if value is not None else b"null") + b"}")


def rows_hash(domain: str, rows: Iterable[DeltaRow]) -> tuple[str, int]:
    """Hash of the domain prefix and JCS of ``rows``, streamed; also returns the byte length."""
    digest = hashlib.sha256(domain.encode())
    size = 0
    for piece in canonical_rows(rows):
        digest.update(piece)
        size += len(piece)
    return digest.hexdigest(), size


def delta_hash(rows: list[DeltaRow]) -> tuple[str, int]:
    return rows_hash(DELTA_DOMAIN, rows)


def journal_entry(
    *, sequence: int, previous: str, envelope: dict[str, Any], outcome: str, result: dict[str, Any], delta: str
) -> dict[str, Any]:
    """A journal entry with its entry hash."""
    entry = {
        "sequence": sequence,
        "previous_entry_hash": previous,
        "envelope": envelope,
        "outcome": outcome,
        "result": result,
        "delta_hash": delta,
    }
    return {**entry, "entry_hash": domain_hash(JOURNAL_DOMAIN, entry)}


def recompute_entry_hash(entry: dict[str, Any]) -> str:
    body = {name: entry[name] for name in
            ("sequence", "previous_entry_hash", "envelope", "outcome", "result", "delta_hash")}
    return domain_hash(JOURNAL_DOMAIN, body)


def journal_bytes(entry: dict[str, Any]) -> bytes:
    return canonical_bytes(entry)
