"""The hash chain: delta hashes, journal entries and the head (docs/spec/engine-and-journal.md §7)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Iterable

from ledger_engine.canonical import (
    DELTA_DOMAIN, JOURNAL_DOMAIN, ZERO_HASH, canonical_string, engine_bytes,
)
from ledger_engine.layout import ALL_FAMILIES

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
    """JCS of ``[{"column_family", "key", "value"}, ...]`` in pieces, reusing each value's canonical bytes.

    docs/spec/engine-and-journal.md §9 names the digest rows ``{column_family, key, value}``; deltas use the
    same shape (docs/adr/0011). The keys column_family < key < value are in JCS
    order, so the concatenation is byte-equal to encoding the whole array at once.
    """
    yield b"["
    separator = b""
    for family, key, value in rows:
        yield separator
        yield row_bytes(family, key, value)
        separator = b","
    yield b"]"


def row_bytes(family: str, key: str, value: bytes | None) -> bytes:
    """JCS of one ``{"column_family", "key", "value"}`` row, given the value's canonical bytes."""
    opening = _ROW_OPENINGS.get(family)
    if opening is None:
        opening = b'{"column_family":' + canonical_string(family) + b',"key":'
    return opening + canonical_string(key) + b',"value":' + (value if value is not None else b"null") + b"}"


# Every row of a family starts with the same bytes.
_ROW_OPENINGS = {family: b'{"column_family":' + canonical_string(family) + b',"key":' for family in ALL_FAMILIES}


def rows_hash(domain: str, rows: Iterable[DeltaRow]) -> tuple[str, int]:
    """Hash of the domain prefix and JCS of ``rows``, streamed; also returns the byte length."""
    digest = hashlib.sha256(domain.encode())
    size = 0
    for piece in canonical_rows(rows):
        digest.update(piece)
        size += len(piece)
    return digest.hexdigest(), size


def encoded_delta(rows: list[DeltaRow]) -> tuple[str, bytes]:
    """The delta's hash and its canonical bytes, which the ledger keeps for exports."""
    encoded = b"".join(canonical_rows(rows))
    return hashlib.sha256(DELTA_DOMAIN.encode() + encoded).hexdigest(), encoded


@dataclass(frozen=True, slots=True)
class EncodedEntry:
    entry_hash: str
    stored: bytes


def encode_entry(*, sequence: int, previous: str, envelope: bytes, outcome: str, result: dict[str, Any],
                 delta: str) -> EncodedEntry:
    """The journal entry, hashed and encoded without re-encoding the already canonical envelope.

    The pieces are in JCS key order (delta_hash, entry_hash, envelope, outcome,
    previous_entry_hash, result, sequence), so the concatenation is the JCS of
    the entry; a test compares it with the reference encoder.
    """
    tail = (b',"envelope":' + envelope + b',"outcome":' + canonical_string(outcome)
            + b',"previous_entry_hash":' + canonical_string(previous)
            + b',"result":' + engine_bytes(result) + b',"sequence":' + str(sequence).encode() + b"}")
    head = b'{"delta_hash":' + canonical_string(delta)
    entry_hash = hashlib.sha256(JOURNAL_DOMAIN.encode() + head + tail).hexdigest()
    return EncodedEntry(entry_hash, head + b',"entry_hash":' + canonical_string(entry_hash) + tail)


def recompute_entry_hash(entry: dict[str, Any]) -> str:
    """The hash of an entry read from a journal line ``canonical_bytes`` checked: its parts need no second walk."""
    body = {name: entry[name] for name in
            ("sequence", "previous_entry_hash", "envelope", "outcome", "result", "delta_hash")}
    return hashlib.sha256(JOURNAL_DOMAIN.encode() + engine_bytes(body)).hexdigest()
