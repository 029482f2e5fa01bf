"""Encoding of stored values: versioned canonical JSON, one shape per column family."""

from __future__ import annotations


import orjson

from ledger_engine.canonical import canonical_bytes, engine_bytes
from ledger_engine.domain.view import Record
from ledger_engine.layout import VALUE_SCHEMA
from ledger_engine.open_json import JsonObject, RecordData


def encode_record(revision: int, data: RecordData) -> bytes:
    return canonical_bytes({"v": VALUE_SCHEMA, "revision": revision, "data": data})


def encode_built_record(revision: int, data: RecordData) -> bytes:
    """``encode_record`` of data a rule built from admitted and stored values: no canonical walk (docs/adr/0054)."""
    return engine_bytes({"v": VALUE_SCHEMA, "revision": revision, "data": data})


def decode_record(raw: bytes) -> Record:
    value = orjson.loads(raw)
    return Record(value["revision"], value["data"])


def stored_value(value: JsonObject) -> JsonObject:
    """Unrevisioned values (events, results, journal entries, meta) carry the schema too."""
    return {"v": VALUE_SCHEMA, **value}


def encode_value(value: JsonObject) -> bytes:
    return canonical_bytes(stored_value(value))


def encode_built_value(value: JsonObject) -> bytes:
    """``encode_value`` of a value the engine built from validated parts: no canonical walk (docs/adr/0054)."""
    return engine_bytes(stored_value(value))


def decode_value(raw: bytes) -> JsonObject:
    value: JsonObject = orjson.loads(raw)
    return value
