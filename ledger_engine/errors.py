"""Stable error codes. Their spellings are a public interface: never rename one."""

from __future__ import annotations

from enum import StrEnum


class ErrorCode(StrEnum):
    # Refused before admission: nothing is journalled, nothing changes.
    MALFORMED_ENVELOPE = "MALFORMED_ENVELOPE"
    UNKNOWN_FIELD = "UNKNOWN_FIELD"
    UNSUPPORTED_SCHEMA_VERSION = "UNSUPPORTED_SCHEMA_VERSION"
    UNKNOWN_COMMAND_TYPE = "UNKNOWN_COMMAND_TYPE"
    UNSUPPORTED_RULESET = "UNSUPPORTED_RULESET"
    INVALID_PAYLOAD = "INVALID_PAYLOAD"
    INVALID_AMOUNT = "INVALID_AMOUNT"
    INVALID_NUMBER = "INVALID_NUMBER"
    INVALID_KEY = "INVALID_KEY"
    COMMAND_ID_CONFLICT = "COMMAND_ID_CONFLICT"
    LEDGER_HALTED = "LEDGER_HALTED"
    LEDGER_ALREADY_OWNED = "LEDGER_ALREADY_OWNED"
    RULE_FAILURE = "RULE_FAILURE"

    # Admitted and journalled as a rejection: the head advances, state does not.
    COMMAND_TOO_LARGE = "COMMAND_TOO_LARGE"
    STALE_REVISION = "STALE_REVISION"
    CAPABILITY_MISSING = "CAPABILITY_MISSING"
    UNKNOWN_ACTOR = "UNKNOWN_ACTOR"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    DUPLICATE_EVIDENCE = "DUPLICATE_EVIDENCE"
    INVALID_STATE = "INVALID_STATE"
    INVALID_SPLITS = "INVALID_SPLITS"
    INVALID_TIME = "INVALID_TIME"
    INVALID_REFERENCE = "INVALID_REFERENCE"
    AMOUNT_OVERFLOW = "AMOUNT_OVERFLOW"
    INSUFFICIENT_FUNDS = "INSUFFICIENT_FUNDS"
    FOUR_EYES_REQUIRED = "FOUR_EYES_REQUIRED"
    INVARIANT_VIOLATION = "INVARIANT_VIOLATION"
    COUNT_MISMATCH = "COUNT_MISMATCH"

    # Verification of exports, backups and replays.
    VERIFICATION_FAILED = "VERIFICATION_FAILED"


class LedgerError(Exception):
    """An error with a stable code; ``detail`` is for people, ``code`` for programs."""

    def __init__(self, code: ErrorCode, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else str(code))
        self.code = code
        self.detail = detail

    def as_dict(self) -> dict[str, str]:
        return {"code": str(self.code), "detail": self.detail}
