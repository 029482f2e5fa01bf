"""The closed command envelope and its hash (docs/spec/engine-and-journal.md §3)."""

from __future__ import annotations

import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ledger_engine.canonical import COMMAND_DOMAIN, MAX_SAFE_INTEGER, canonical_bytes, sha256_hex
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import IDENTIFIER_PATTERN as IDENTIFIER_PATTERN  # the public name the edges validate IDs by
from ledger_engine.open_json import Unvalidated

# Pydantic searches patterns unanchored, so every pattern here carries ^ and $.
MAX_ENVELOPE_BYTES = 1024 * 1024
ENVELOPE_SCHEMA_VERSION = 1
UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"

_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True)


class ExpectedRevision(BaseModel):
    """A precondition on one record: its current revision, or ``None`` for absent."""

    model_config = _STRICT

    cf: Literal["state", "unique", "outbox"]
    key: str = Field(min_length=1, max_length=512)
    revision: int | None = Field(ge=1, le=MAX_SAFE_INTEGER)

    @property
    def sort_key(self) -> tuple[str, str]:
        return (self.cf, self.key)


class CommandEnvelope(BaseModel):
    """Exactly the fields the specification requires; anything else is an error."""

    model_config = _STRICT

    schema_version: int
    command_id: str = Field(pattern=UUID_PATTERN)
    command_type: str = Field(pattern=r"^[A-Z][A-Za-z]{2,63}$")
    actor_id: str = Field(pattern=IDENTIFIER_PATTERN)
    admitted_at_ms: int = Field(ge=0, le=MAX_SAFE_INTEGER)
    ruleset_version: str = Field(pattern=IDENTIFIER_PATTERN)
    expected_revisions: list[ExpectedRevision]
    payload: Unvalidated
    evidence_hashes: list[str]

    @field_validator("expected_revisions")
    @classmethod
    def _sorted_distinct_keys(cls, value: list[ExpectedRevision]) -> list[ExpectedRevision]:
        keys = [item.sort_key for item in value]
        if keys != sorted(set(keys)):
            raise ValueError("expected_revisions must be sorted by (cf, key) with distinct keys")
        return value

    @field_validator("evidence_hashes")
    @classmethod
    def _hex_digests(cls, value: list[str]) -> list[str]:
        if any(not re.fullmatch(SHA256_PATTERN, item) for item in value):
            raise ValueError("evidence_hashes must be lowercase hex SHA-256 digests")
        if list(value) != sorted(set(value)):
            raise ValueError("evidence_hashes must be sorted and distinct")
        return value


def envelope_hash(canonical: bytes) -> str:
    return sha256_hex(COMMAND_DOMAIN.encode() + canonical)


Code = TypeVar("Code", bound=str)  # the default's code set: the ledger's, or an edge's own


def pydantic_error_code(error: ValidationError, default: Code) -> tuple[ErrorCode | Code, str]:
    """Map the first validation problem to a stable code and a readable detail."""
    first = error.errors()[0]
    location = ".".join(str(part) for part in first["loc"]) or "(root)"
    detail = f"{location}: {first['msg']}"
    kind = first["type"]
    if kind == "extra_forbidden":
        return ErrorCode.UNKNOWN_FIELD, detail
    if kind == "invalid_amount":
        return ErrorCode.INVALID_AMOUNT, detail
    if kind in ("float_type", "int_from_float") or isinstance(first.get("input"), float):
        return ErrorCode.INVALID_NUMBER, detail
    return default, detail


def parse_envelope(document: Any) -> tuple[CommandEnvelope, bytes]:
    """Validate a decoded envelope; returns it with its canonical bytes.

    Raises ``LedgerError`` with a stable code for every malformed input.
    """
    if not isinstance(document, dict):
        raise LedgerError(ErrorCode.MALFORMED_ENVELOPE, "an envelope is a JSON object")
    canonical = canonical_bytes(document)  # also refuses nesting deeper than MAX_JSON_DEPTH
    if len(canonical) > MAX_ENVELOPE_BYTES:
        raise LedgerError(ErrorCode.COMMAND_TOO_LARGE, "canonical envelope exceeds 1 MiB")
    version = document.get("schema_version")
    if "schema_version" in document and type(version) is int and version != ENVELOPE_SCHEMA_VERSION:
        raise LedgerError(ErrorCode.UNSUPPORTED_SCHEMA_VERSION, f"schema_version {version} is not supported")
    try:
        envelope = CommandEnvelope.model_validate(document)
    except ValidationError as error:
        raise LedgerError(*pydantic_error_code(error, ErrorCode.MALFORMED_ENVELOPE)) from None
    return envelope, canonical
