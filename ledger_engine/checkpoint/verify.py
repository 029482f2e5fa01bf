"""Verification of a portable export: every file hash, the state digest and the journal chain.

The first failing item is reported by name, e.g. ``journal.jsonl:17``.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Iterator

import orjson

from ledger_engine.application.journal import recompute_entry_hash
from ledger_engine.canonical import STATE_DOMAIN, ZERO_HASH, canonical_bytes
from ledger_engine.checkpoint.export import (
    EVENTS_FILE, EXPORT_FORMAT, GENESIS_FILE, JOURNAL_FILE, METADATA_FILE, ROWS_FILE,
)
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.genesis import genesis_hash
from ledger_engine.layout import DIGEST_FAMILIES

REQUIRED_FILES = (ROWS_FILE, JOURNAL_FILE, EVENTS_FILE, GENESIS_FILE)


class VerificationError(LedgerError):
    def __init__(self, item: str, reason: str) -> None:
        super().__init__(ErrorCode.VERIFICATION_FAILED, f"{item}: {reason}")
        self.item = item
        self.reason = reason


def file_digest(path: Path) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def _lines(path: Path, name: str) -> Iterator[tuple[str, bytes, Any]]:
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            item = f"{name}:{number}"
            raw = line.rstrip(b"\n")
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise VerificationError(item, "not valid JSON") from None
            if canonical_bytes(value) != raw:
                raise VerificationError(item, "not canonical JSON")
            yield item, raw, value


def read_metadata(directory: str | os.PathLike) -> dict[str, Any]:
    path = Path(directory) / METADATA_FILE
    try:
        metadata = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise VerificationError(METADATA_FILE, f"unreadable: {error}") from None
    if metadata.get("format") != EXPORT_FORMAT:
        raise VerificationError(METADATA_FILE, f"unknown export format {metadata.get('format')!r}")
    return metadata


def verify_export(directory: str | os.PathLike) -> dict[str, Any]:
    """Verify everything; returns the metadata, or raises ``VerificationError`` naming the first bad item."""
    root = Path(directory)
    metadata = read_metadata(root)
    _verify_file_hashes(root, metadata)
    _verify_genesis(root, metadata)
    _verify_state_rows(root, metadata)
    _verify_journal(root, metadata)
    _verify_events(root, metadata)
    return metadata


def _verify_file_hashes(root: Path, metadata: dict[str, Any]) -> None:
    for name in REQUIRED_FILES:
        expected = metadata["files"].get(name)
        if expected is None:
            raise VerificationError(METADATA_FILE, f"does not list {name}")
        path = root / name
        if not path.exists():
            raise VerificationError(name, "missing")
        digest, size = file_digest(path)
        if digest != expected["sha256"] or size != expected["bytes"]:
            raise VerificationError(name, "file hash does not match metadata")


def _verify_genesis(root: Path, metadata: dict[str, Any]) -> None:
    document = orjson.loads((root / GENESIS_FILE).read_bytes())
    if genesis_hash(document) != metadata["genesis_hash"]:
        raise VerificationError(GENESIS_FILE, "genesis hash does not match metadata")


def _verify_state_rows(root: Path, metadata: dict[str, Any]) -> None:
    digest = hashlib.sha256(STATE_DOMAIN.encode() + b"[")
    previous: tuple[bytes, bytes] | None = None
    for item, raw, row in _lines(root / ROWS_FILE, ROWS_FILE):
        if set(row) != {"cf", "key", "value"} or row["cf"] not in DIGEST_FAMILIES:
            raise VerificationError(item, "not a logical state row")
        order = (row["cf"].encode(), row["key"].encode())
        if previous is not None and order <= previous:
            raise VerificationError(item, "rows out of canonical order")
        digest.update(raw if previous is None else b"," + raw)
        previous = order
    digest.update(b"]")
    if digest.hexdigest() != metadata["logical_state_hash"]:
        raise VerificationError(ROWS_FILE, "logical state hash does not match metadata")


def _verify_journal(root: Path, metadata: dict[str, Any]) -> None:
    previous_hash, sequence = ZERO_HASH, 0
    for item, _, entry in _lines(root / JOURNAL_FILE, JOURNAL_FILE):
        sequence += 1
        if entry.get("sequence") != sequence:
            raise VerificationError(item, f"expected sequence {sequence}, found {entry.get('sequence')}")
        if entry["previous_entry_hash"] != previous_hash:
            raise VerificationError(item, "previous entry hash breaks the chain")
        if recompute_entry_hash(entry) != entry["entry_hash"]:
            raise VerificationError(item, "entry hash does not match its contents")
        previous_hash = entry["entry_hash"]
    if sequence != metadata["sequence"] or previous_hash != metadata["last_entry_hash"]:
        raise VerificationError(JOURNAL_FILE, "journal does not end at the exported head")


def _verify_events(root: Path, metadata: dict[str, Any]) -> None:
    previous = ""
    for item, _, row in _lines(root / EVENTS_FILE, EVENTS_FILE):
        key = row.get("key", "")
        parts = key.split("/")
        if len(parts) != 2 or not all(len(p) == 20 and p.isdigit() for p in parts) or key <= previous:
            raise VerificationError(item, "bad or out-of-order event key")
        if not 1 <= int(parts[0]) <= metadata["sequence"]:
            raise VerificationError(item, "event outside the exported journal")
        previous = key
