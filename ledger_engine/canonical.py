"""Canonical JSON (RFC 8785, JCS) and the domain-separated hashes built on it.

Stored values only contain strings, integers within the IEEE-754 safe range,
booleans, null, lists and objects. For those shapes with ASCII object keys,
orjson with sorted keys produces exactly the RFC 8785 bytes; a property test
pins that equality against the reference ``rfc8785`` package. Anything else
(non-ASCII keys, where UTF-16 and UTF-8 key orders can differ) falls back to
the reference encoder, and floats are refused outright: money is integers.

``engine_bytes`` encodes what the engine built itself from parts already
validated (index values, command results, the head), or a part of a document
whose whole text ``canonical_bytes`` already checked (an export's lines): it
skips the walk and lets orjson refuse unsafe integers; output that is not pure
ASCII (so possibly a non-ASCII key) goes through ``canonical_bytes`` instead
(docs/adr/0054).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, NoReturn

import orjson
import rfc8785

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import JsonObject

MAX_SAFE_INTEGER = 2**53 - 1

COMMAND_DOMAIN = "porto:london:command:v1\n"
DELTA_DOMAIN = "porto:london:delta:v1\n"
JOURNAL_DOMAIN = "porto:london:journal:v1\n"
STATE_DOMAIN = "porto:london:state:v1\n"
GENESIS_DOMAIN = "porto:london:genesis:v1\n"

_ORJSON_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER

# Deepest nesting of arrays and objects accepted anywhere (an envelope is 1, its payload 2). Every
# command payload is far shallower; the bound keeps every encoder and validator off its recursion limit.
MAX_JSON_DEPTH = 32
# Raw text accepted for one document: twice the envelope bound leaves room for insignificant whitespace.
MAX_JSON_TEXT_BYTES = 2 * 1024 * 1024


def _refuse(value: Any) -> NoReturn:
    if type(value) is float:
        raise LedgerError(ErrorCode.INVALID_NUMBER, "floating-point numbers are not accepted")
    if type(value) is int:
        raise LedgerError(ErrorCode.INVALID_NUMBER, "integer outside the safe JSON range")
    raise LedgerError(ErrorCode.INVALID_NUMBER, f"unsupported value type {type(value).__name__}")


def _has_only_ascii_keys(value: Any, depth: int = 1) -> bool:
    """Walk the value, refusing floats, unsupported types and nesting deeper than ``MAX_JSON_DEPTH``.

    Scalars are checked inline rather than by recursion: this walk runs on
    every stored value, so it is on the command hot path.
    """
    if depth > MAX_JSON_DEPTH:
        raise LedgerError(ErrorCode.JSON_TOO_DEEP, f"JSON nests deeper than {MAX_JSON_DEPTH} levels")
    kind = type(value)
    if kind is dict:
        ascii_keys = True
        for key in value:
            if type(key) is not str:
                raise LedgerError(ErrorCode.INVALID_NUMBER, "object keys must be strings")
            ascii_keys = ascii_keys and key.isascii()
        items = value.values()
    elif kind is list or kind is tuple:
        ascii_keys, items = True, value
    elif kind is str or kind is bool or value is None or (kind is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER):
        return True
    else:
        _refuse(value)
    for item in items:
        item_kind = type(item)
        if item_kind is str or item_kind is bool or item is None:
            continue
        if item_kind is int and -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
            continue
        if item_kind is dict or item_kind is list or item_kind is tuple:
            ascii_keys = _has_only_ascii_keys(item, depth + 1) and ascii_keys
            continue
        _refuse(item)
    return ascii_keys


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 encoding of ``value``; deeper than ``MAX_JSON_DEPTH`` is ``JSON_TOO_DEEP``."""
    if _has_only_ascii_keys(value):
        return orjson.dumps(value, option=_ORJSON_OPTIONS)
    return rfc8785.dumps(value)


def engine_bytes(value: Any) -> bytes:
    """``canonical_bytes`` of a value the engine built from validated parts, without the walk.

    Such a value holds no float (its numbers are counts and revisions; amounts
    are strings; a part of a checked document was walked with it), so only key
    order and integer range can differ from RFC 8785:
    ASCII output has ASCII keys, which orjson sorts as RFC 8785 does, and an
    unsafe integer (or any type orjson refuses) is left to ``canonical_bytes``
    to refuse with its stable code.
    """
    try:
        encoded = orjson.dumps(value, option=_ORJSON_OPTIONS)
    except orjson.JSONEncodeError:
        return canonical_bytes(value)
    return encoded if encoded.isascii() else canonical_bytes(value)


def canonical_string(text: str) -> bytes:
    """JCS of a string; orjson escapes strings exactly as RFC 8785 does."""
    return orjson.dumps(text)


def require_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse ``value`` if arrays and objects nest deeper than ``limit``; walks without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if type(item) is dict else item if type(item) in (list, tuple) else None
        if children is None:
            continue
        if depth > limit:
            raise LedgerError(ErrorCode.JSON_TOO_DEEP, f"JSON nests deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children)


def _refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> JsonObject:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise LedgerError(ErrorCode.DUPLICATE_KEY, f"object key {duplicate[:64]!r} appears more than once")
    return {}


def parse_json(raw: bytes | str) -> Any:
    """Parse untrusted JSON text: the one function every text boundary uses (CLI, API bodies, adapters).

    Malformed text or invalid UTF-8 is ``MALFORMED_ENVELOPE``, text over
    ``MAX_JSON_TEXT_BYTES`` is ``COMMAND_TOO_LARGE``, nesting deeper than
    ``MAX_JSON_DEPTH`` is ``JSON_TOO_DEEP`` and a key repeated in any object
    (which orjson would silently resolve to the last) is ``DUPLICATE_KEY``.
    """
    if len(raw) > MAX_JSON_TEXT_BYTES:
        raise LedgerError(ErrorCode.COMMAND_TOO_LARGE, f"JSON text exceeds {MAX_JSON_TEXT_BYTES} bytes")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if "depth limit" in str(error) or "recursion" in str(error).lower():
            raise LedgerError(ErrorCode.JSON_TOO_DEEP, f"JSON nests deeper than {MAX_JSON_DEPTH} levels") from None
        raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, f"not valid JSON: {error}") from None
    require_depth(value)
    if isinstance(value, (dict, list)):
        # orjson keeps the last of repeated keys; the standard parser shows every pair to the hook.
        json.loads(raw, object_pairs_hook=_refuse_duplicate_keys)
    return value


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def domain_hash(domain: str, value: Any) -> str:
    """SHA-256 of the UTF-8 domain prefix followed by the JCS of ``value``, as hex."""
    digest = hashlib.sha256(domain.encode())
    digest.update(canonical_bytes(value))
    return digest.hexdigest()


ZERO_HASH = "0" * 64
