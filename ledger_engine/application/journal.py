"""The hash chain: delta hashes and journal entries (docs/spec/engine-and-journal.md §7); the head is storage/head.py."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

from ledger_engine.canonical import DELTA_DOMAIN, JOURNAL_DOMAIN, canonical_string, engine_bytes
from ledger_engine.open_json import CommandResult, Document
from ledger_engine.storage.rows import DeltaRow, canonical_rows


def encoded_delta(rows: list[DeltaRow]) -> tuple[str, bytes]:
    """The delta's hash and its canonical bytes, which the ledger keeps for exports."""
    encoded = b"".join(canonical_rows(rows))
    return hashlib.sha256(DELTA_DOMAIN.encode() + encoded).hexdigest(), encoded


@dataclass(frozen=True, slots=True)
class EncodedEntry:
    entry_hash: str
    stored: bytes


def encode_entry(*, sequence: int, previous: str, envelope: bytes, outcome: str, result: CommandResult,
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


def recompute_entry_hash(entry: Document) -> str:
    """The hash of an entry read from a journal line ``canonical_bytes`` checked: its parts need no second walk."""
    body = {name: entry[name] for name in
            ("sequence", "previous_entry_hash", "envelope", "outcome", "result", "delta_hash")}
    return hashlib.sha256(JOURNAL_DOMAIN.encode() + engine_bytes(body)).hexdigest()
