"""Encoding of stored values: versioned canonical JSON, one shape per column family."""

from __future__ import annotations

from typing import Any

import orjson

from ledger_engine.canonical import canonical_bytes
from ledger_engine.domain.view import Record
from ledger_engine.layout import VALUE_SCHEMA


def encode_record(revision: int, data: dict[str, Any]) -> bytes:
    return canonical_bytes({"v": VALUE_SCHEMA, "revision": revision, "data": data})


def decode_record(raw: bytes) -> Record:
    value = orjson.loads(raw)
    return Record(value["revision"], value["data"])


def encode_value(value: dict[str, Any]) -> bytes:
    """Unrevisioned values (events, results, journal entries, meta) carry the schema too."""
    return canonical_bytes({"v": VALUE_SCHEMA, **value})


def decode_value(raw: bytes) -> dict[str, Any]:
    return orjson.loads(raw)
