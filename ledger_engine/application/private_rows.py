"""Private auxiliary rows (``private_aux``): identity mappings and provider secret references.

They lie outside the logical state and its digest and are never needed to reproduce a transition, so
no export holds them and no hash covers them. What may be stored there is therefore fixed by shape:
a key ``KIND/ID`` of a known kind, and a canonical value of the current schema.
"""

from __future__ import annotations

from typing import Any

import orjson

from ledger_engine.canonical import canonical_bytes
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import component
from ledger_engine.layout import VALUE_SCHEMA

PRIVATE_KINDS = ("identity", "provider_secret_ref")


def require_private_key(key: str) -> str:
    kind, _, record_id = key.partition("/")
    if kind not in PRIVATE_KINDS:
        raise LedgerError(ErrorCode.INVALID_KEY, f"a private row's key is one of {PRIVATE_KINDS} and an ID: {key!r}")
    component(record_id)
    return key


def require_private_row(key: bytes, raw: bytes) -> None:
    """A stored private row of the right shape; anything else is ``INVALID_KEY`` or ``INVALID_PAYLOAD``."""
    try:
        require_private_key(key.decode("ascii"))
    except UnicodeDecodeError:
        raise LedgerError(ErrorCode.INVALID_KEY, f"a private row's key is ASCII: {key!r}") from None
    try:
        value: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = None
    if not (isinstance(value, dict) and value.get("v") == VALUE_SCHEMA and canonical_bytes(value) == raw):
        raise LedgerError(ErrorCode.INVALID_PAYLOAD, f"private row {key.decode()} is not a canonical stored value")
