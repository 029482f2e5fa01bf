"""Portable export: sorted logical rows, journal, deltas and events as separately hashed files.

Format 2 (docs/adr/0011): ``deltas.jsonl`` holds, for every sequence from 0
(genesis) to the head, the canonical set operations whose hash is that
entry's ``delta_hash``, so an auditor can fold them into the state rows and
events without trusting the ledger. ``metadata.json`` also carries
``journal_tree``, ``{"size": n, "root": hex}``: the RFC 9162 Merkle root over
entry hashes 1..n beside the chain head (docs/merkle.md, docs/adr/0039).

The export is taken from a store nobody is writing: a read-only checkpoint of
a live owner (``LedgerOwner.with_checkpoint``) or a stopped ledger. It never
relies on rocksdict snapshot iteration (docs/adr/0002).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable

import orjson

from ledger_engine.open_json import Document
from ledger_engine.storage.rows import row_bytes
from ledger_engine.application.owner import read_genesis
from ledger_engine.storage.head import read_head
from ledger_engine.canonical import STATE_DOMAIN, canonical_bytes, canonical_string
from ledger_engine.storage.digest import logical_rows
from ledger_engine.checkpoint.form import (
    DELTAS_FILE, EVENTS_FILE, GENESIS_FILE, JOURNAL_FILE, METADATA_FILE, ROWS_FILE,
)
from ledger_engine.domain.ruleset import RULESET_VERSION
from ledger_engine.envelope import ENVELOPE_SCHEMA_VERSION
from ledger_engine.errors import ErrorCode, StorageFault
from ledger_engine.genesis import genesis_hash
from ledger_engine.keys import seq20
from ledger_engine.layout import DELTAS, EVENTS, JOURNAL
from ledger_engine.merkle.frontier import Frontier
from ledger_engine.merkle.journal import journal_leaf_hash
from ledger_engine.storage.rocks import RocksStore

EXPORT_FORMAT_VERSION = 2
EXPORT_FORMAT = f"porto-london-export/{EXPORT_FORMAT_VERSION}"


class HashedWriter:
    """Writes lines to a file while hashing its bytes."""

    def __init__(self, path: Path) -> None:
        self._file = open(path, "wb")
        self.sha256 = hashlib.sha256()
        self.bytes = 0
        self.lines = 0

    def write_line(self, line: bytes) -> None:
        data = line + b"\n"
        self._file.write(data)
        self.sha256.update(data)
        self.bytes += len(data)
        self.lines += 1

    def close(self) -> Document:
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        return {"sha256": self.sha256.hexdigest(), "bytes": self.bytes, "lines": self.lines}


def _write_file(path: Path, lines: Iterable[bytes]) -> Document:
    writer = HashedWriter(path)
    for line in lines:
        writer.write_line(line)
    return writer.close()


def event_lines(store: RocksStore) -> Iterable[bytes]:
    """Each event as the JCS of ``{"key", "value"}``, in key order."""
    for key, value in store.scan(EVENTS):
        yield b'{"key":' + canonical_string(key.decode()) + b',"value":' + value + b"}"


def delta_lines(store: RocksStore, sequence: int) -> Iterable[bytes]:
    """``{"delta": [...], "sequence": n}`` for 0..``sequence``; a missing delta is damaged storage."""
    for number in range(sequence + 1):
        delta = store.get(DELTAS, seq20(number).encode())
        if delta is None:
            raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{DELTAS}/{seq20(number)} is missing")
        yield b'{"delta":' + delta + b',"sequence":' + str(number).encode() + b"}"


class JournalTreeFold:
    """The journal tree's frontier, grown over the entries as they stream past."""

    def __init__(self) -> None:
        self.frontier = Frontier()

    def add(self, entry_hash: str) -> None:
        self.frontier, _ = self.frontier.append(journal_leaf_hash(entry_hash))

    def as_json(self) -> Document:
        """``{"size": n, "root": hex}``: the Merkle root over entry hashes 1..n (docs/merkle.md)."""
        return {"size": self.frontier.size, "root": self.frontier.root().hex()}


class StateDigest:
    """The logical state hash, folded over the state row lines as they stream past."""

    def __init__(self) -> None:
        self._sha256 = hashlib.sha256(STATE_DOMAIN.encode() + b"[")
        self._separator = b""

    def add(self, line: bytes) -> None:
        self._sha256.update(self._separator + line)
        self._separator = b","

    def hexdigest(self) -> str:
        closed = self._sha256.copy()
        closed.update(b"]")
        return closed.hexdigest()


def state_row_lines(store: RocksStore, digest: StateDigest) -> Iterable[bytes]:
    """Each logical row as the JCS of ``{"column_family", "key", "value"}``, in digest order, added to ``digest``."""
    for family, key, value in logical_rows(store):
        line = row_bytes(family, key, value)
        digest.add(line)
        yield line


def journal_lines(store: RocksStore, fold: JournalTreeFold) -> Iterable[bytes]:
    """Entries 1..n in key order; an entry under any key but its number's is damaged storage.

    The owner finds the head and every entry by its number, so a ledger whose entries verify in order
    under other keys would verify here and then fail to open, or answer for the wrong entry.
    """
    for number, (key, value) in enumerate(store.scan(JOURNAL), start=1):
        if key != seq20(number).encode():
            raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{JOURNAL}/{key.decode(errors='replace')} is where "
                                                          f"entry {number} belongs, under {seq20(number)}")
        fold.add(orjson.loads(value)["entry_hash"])
        yield value


def export_store(store: RocksStore, destination: str | os.PathLike[str]) -> Document:
    """Export ``store`` into ``destination`` (created, must be empty); returns the metadata."""
    out = Path(destination)
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise FileExistsError(f"export destination {out} is not empty")
    head = read_head(store)
    genesis = read_genesis(store)

    state_digest = StateDigest()
    journal_tree = JournalTreeFold()
    files = {
        ROWS_FILE: _write_file(out / ROWS_FILE, state_row_lines(store, state_digest)),
        JOURNAL_FILE: _write_file(out / JOURNAL_FILE, journal_lines(store, journal_tree)),
        DELTAS_FILE: _write_file(out / DELTAS_FILE, delta_lines(store, head.sequence)),
        EVENTS_FILE: _write_file(out / EVENTS_FILE, event_lines(store)),
        GENESIS_FILE: _write_file(out / GENESIS_FILE, [canonical_bytes(genesis)]),
    }
    metadata = {
        "format": EXPORT_FORMAT,
        "format_version": EXPORT_FORMAT_VERSION,
        "schema_version": ENVELOPE_SCHEMA_VERSION,
        "ruleset_version": RULESET_VERSION,
        "sequence": head.sequence,
        "last_entry_hash": head.entry_hash,
        "journal_tree": journal_tree.as_json(),
        "logical_state_hash": state_digest.hexdigest(),
        "genesis_hash": genesis_hash(genesis),
        "private_aux_excluded": True,
        "files": files,
    }
    (out / METADATA_FILE).write_bytes(canonical_bytes(metadata) + b"\n")
    return metadata
