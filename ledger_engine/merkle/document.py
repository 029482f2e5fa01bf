"""Proof documents: canonical JSON files that verify without a ledger, and why one is refused.

A document is read strictly: UTF-8 JSON whose bytes are exactly its RFC 8785
encoding (one trailing newline allowed), holding only strings, safe integers,
booleans, null, arrays and objects with ASCII keys; then each field is checked
in a fixed order. The first failure is reported as a stable ``Reason`` and the
field it concerns (``path[2]``, ``statement.lines[0].amount``), so every
verifier following docs/merkle.md names the same failure for the same file.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any, NoReturn

from ledger_engine.canonical import MAX_JSON_DEPTH, MAX_SAFE_INTEGER, canonical_bytes
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.merkle.tree import ProofError
from ledger_engine.open_json import Document

MAX_DOCUMENT_BYTES = 1 << 20
HEX_HASH = re.compile(r"[0-9a-f]{64}")
AMOUNT_PATTERN = r"^(0|[1-9][0-9]{0,19})$"
U64_MAX = 2**64 - 1
# What became of each check a verifier reports.
PASSED, FAILED, NOT_MADE = "passed", "failed", "not made"
# A string (skipped whole), a quote that opens no complete string, an opening or a closing bracket.
_NESTING_TOKENS = re.compile(r'"(?:[^"\\]++|\\.)*+"|"|[\[{]|[\]}]', re.DOTALL)
_LONE_SURROGATE = re.compile(r"[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


class Reason(StrEnum):
    """Why a document was refused. Spellings are a public interface: never rename one."""

    TOO_LARGE = "TOO_LARGE"
    NOT_JSON = "NOT_JSON"
    NOT_CANONICAL = "NOT_CANONICAL"
    MALFORMED = "MALFORMED"
    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"
    INVALID_HASH = "INVALID_HASH"
    INVALID_STATEMENT = "INVALID_STATEMENT"
    LEAF_MISMATCH = "LEAF_MISMATCH"
    INDEX_OUT_OF_RANGE = "INDEX_OUT_OF_RANGE"
    SIZE_ORDER = "SIZE_ORDER"
    PROOF_LENGTH = "PROOF_LENGTH"
    ROOT_MISMATCH = "ROOT_MISMATCH"
    FIRST_ROOT_MISMATCH = "FIRST_ROOT_MISMATCH"
    SECOND_ROOT_MISMATCH = "SECOND_ROOT_MISMATCH"
    TOO_DEEP = "TOO_DEEP"
    CHECKPOINT_MISMATCH = "CHECKPOINT_MISMATCH"
    UNKNOWN_KEY = "UNKNOWN_KEY"
    SIGNATURE_INVALID = "SIGNATURE_INVALID"
    PARTS_NOT_IN_STATEMENT = "PARTS_NOT_IN_STATEMENT"
    PARTS_DAY_LINE_MISMATCH = "PARTS_DAY_LINE_MISMATCH"
    PARTS_COUNT_MISMATCH = "PARTS_COUNT_MISMATCH"
    PARTS_SUM_MISMATCH = "PARTS_SUM_MISMATCH"
    PARTS_DIGEST_MISMATCH = "PARTS_DIGEST_MISMATCH"


class ProofRejected(LedgerError):
    """A document that does not verify: ``reason`` (stable), ``field`` (where), ``detail`` (in words)."""

    def __init__(self, reason: Reason, field: str, detail: str) -> None:
        super().__init__(ErrorCode.VERIFICATION_FAILED, f"{reason} at {field or 'the document'}: {detail}")
        self.reason = reason
        self.field = field
        self.proof_detail = detail

    def as_dict(self) -> dict[str, str]:
        return {"code": str(self.code), "reason": str(self.reason), "field": self.field, "detail": self.proof_detail}


def reject(reason: Reason, field: str, detail: str) -> NoReturn:
    raise ProofRejected(reason, field, detail)


def rejected_proof(error: ProofError, fields: dict[str, str]) -> ProofRejected:
    """A tree-level proof failure as a document failure, at the field its reason points to."""
    reason = Reason(error.reason)
    return ProofRejected(reason, fields[reason], error.detail)


def read_document(raw: bytes | Document, max_bytes: int = MAX_DOCUMENT_BYTES) -> Document:
    """The document as a JSON object, from its exact bytes (at most ``max_bytes``) or from a value already parsed."""
    if isinstance(raw, (bytes, bytearray)):
        value = _parse(bytes(raw), max_bytes)
        check_shapes(value)
        encoded = canonical_bytes(value)
        if bytes(raw) not in (encoded, encoded + b"\n"):
            reject(Reason.NOT_CANONICAL, "", "the file is not in canonical JSON (RFC 8785) form")
    else:
        value = raw
        check_shapes(value)
    if type(value) is not dict:
        reject(Reason.MALFORMED, "", "the document is not a JSON object")
    return value


def _parse(raw: bytes, max_bytes: int) -> Any:
    if len(raw) > max_bytes:
        reject(Reason.TOO_LARGE, "", f"the file has {len(raw)} bytes; at most {max_bytes} are read")
    try:
        text = raw.decode("utf-8")
        if text.startswith("\ufeff"):
            reject(Reason.NOT_JSON, "", "the file starts with a byte order mark")
        require_shallow(text)
        return json.loads(text, parse_constant=_no_constant, parse_int=_parse_int)
    except (UnicodeDecodeError, ValueError, RecursionError):
        reject(Reason.NOT_JSON, "", "the file is not UTF-8 JSON")


def require_shallow(text: str) -> None:
    """Refuse text whose arrays and objects nest deeper than the ledger's ``MAX_JSON_DEPTH``, before parsing.

    The count runs over the text without recursion, so no nesting reaches a parser's or a walker's stack.
    It stops at a string that never closes: the rest is not JSON, which parsing then says.
    """
    depth = 0
    for token in _NESTING_TOKENS.finditer(text):
        found = token.group()
        if found == '"':
            return
        if found in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                reject(Reason.TOO_DEEP, "", f"arrays and objects nest deeper than {MAX_JSON_DEPTH} levels")
        elif found in ("]", "}"):
            depth -= 1


def _parse_int(digits: str) -> int | float:
    """Integers as ints; one too long for any u64 stands as a float, refused as JavaScript would read it."""
    return int(digits) if len(digits) <= 21 else float("inf")


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def check_shapes(value: Any) -> None:
    """Only the shapes RFC 8785 encodes the same everywhere: first no unpaired surrogate, then the rest.

    A failure here concerns the file as a whole (its field is ""): a JavaScript
    reader sees 1.0 as 1, so only the file's bytes, not a field, can differ.
    """
    if _has_unpaired_surrogate(value):
        reject(Reason.NOT_JSON, "", "a string holds an unpaired surrogate")
    _check_values(value, "")


def _has_unpaired_surrogate(value: Any) -> bool:
    if type(value) is str:
        return _LONE_SURROGATE.search(value) is not None
    if type(value) is list:
        return any(_has_unpaired_surrogate(item) for item in value)
    if type(value) is dict:
        return any(_has_unpaired_surrogate(key) or _has_unpaired_surrogate(item) for key, item in value.items())
    return False


def _check_values(value: Any, where: str) -> None:
    kind = type(value)
    if kind is int:
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            reject(Reason.NOT_CANONICAL, "", f"{where or 'a value'} is an integer outside the safe range (2^53 - 1)")
    elif kind is float:
        reject(Reason.NOT_CANONICAL, "", f"{where or 'a value'} is a number with a fraction or exponent")
    elif kind is list:
        for position, item in enumerate(value):
            _check_values(item, f"{where}[{position}]")
    elif kind is dict:
        if not all(key.isascii() for key in value):
            reject(Reason.NOT_CANONICAL, "", f"{where or 'the document'} has an object key outside ASCII")
        for key in sorted(value):
            _check_values(value[key], join(where, key))
    else:
        assert value is None or kind is bool or kind is str, kind


def join(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


def require_version(document: Document, known: tuple[str, ...]) -> str:
    if "version" not in document:
        reject(Reason.MALFORMED, "version", "the document has no version")
    version = document["version"]
    if type(version) is not str or version not in known:
        reject(Reason.UNSUPPORTED_VERSION, "version", f"unknown version {version!r}; this verifier reads {', '.join(known)}")
    return version


def require_fields(document: Document, fields: tuple[str, ...], where: str = "") -> None:
    """Exactly these fields: the first missing one (in the listed order), else the first unknown one."""
    for name in fields:
        if name not in document:
            reject(Reason.MALFORMED, join(where, name), "a required field is missing")
    for name in sorted(set(document) - set(fields)):
        reject(Reason.MALFORMED, join(where, name), "an unknown field")


def read_object(document: Document, name: str, where: str = "") -> Document:
    value = document[name]
    if type(value) is not dict:
        reject(Reason.MALFORMED, join(where, name), "not a JSON object")
    return value


def read_count(document: Document, name: str, minimum: int, where: str = "") -> int:
    value = document[name]
    if type(value) is not int or value < minimum:
        reject(Reason.MALFORMED, join(where, name), f"not an integer of at least {minimum}")
    return value


def read_hash(document: Document, name: str, where: str = "") -> bytes:
    return _hash(document[name], join(where, name))


def read_hashes(document: Document, name: str) -> list[bytes]:
    values = document[name]
    if type(values) is not list:
        reject(Reason.MALFORMED, name, "not an array of hashes")
    return [_hash(value, f"{name}[{position}]") for position, value in enumerate(values)]


def _hash(value: Any, field: str) -> bytes:
    if type(value) is not str or not HEX_HASH.fullmatch(value):
        reject(Reason.INVALID_HASH, field, "not a SHA-256 hash in 64 lowercase hex digits")
    return bytes.fromhex(value)


def is_amount(value: Any) -> bool:
    """A canonical unsigned 64-bit decimal string: how every amount is written."""
    return type(value) is str and re.fullmatch(AMOUNT_PATTERN, value) is not None and int(value) <= U64_MAX


def encode_document(document: Document) -> bytes:
    """A document's file bytes: its canonical JSON and a newline."""
    return canonical_bytes(document) + b"\n"
