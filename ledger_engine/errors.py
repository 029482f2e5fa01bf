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
    JSON_TOO_DEEP = "JSON_TOO_DEEP"
    DUPLICATE_KEY = "DUPLICATE_KEY"
    ADMISSION_TIME_REGRESSED = "ADMISSION_TIME_REGRESSED"
    ADMISSION_TIME_AHEAD = "ADMISSION_TIME_AHEAD"
    # The ledger owner's own actor, or a command only it submits (in process), sent from outside it (docs/adr/0073).
    OWNER_ONLY = "OWNER_ONLY"

    # The ledger's storage: refused at open, or a read that halts the owner. Nothing is changed.
    LEDGER_NOT_FOUND = "LEDGER_NOT_FOUND"
    STORAGE_INCOMPLETE = "STORAGE_INCOMPLETE"
    STORAGE_CORRUPT = "STORAGE_CORRUPT"
    STORAGE_ROLLED_BACK = "STORAGE_ROLLED_BACK"
    # A store that skips fsync outside the test tier (docs/adr/0043).
    STORE_NOT_DURABLE = "STORE_NOT_DURABLE"

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
    EXPIRED = "EXPIRED"
    SIGNATURE_INVALID = "SIGNATURE_INVALID"
    KEY_NOT_VALID = "KEY_NOT_VALID"
    NONCE_REUSED = "NONCE_REUSED"
    ALREADY_CONSUMED = "ALREADY_CONSUMED"
    CONFLICTING_EVIDENCE = "CONFLICTING_EVIDENCE"
    NODE_NOT_ACTIVE = "NODE_NOT_ACTIVE"
    SESSION_ALREADY_ACTIVE = "SESSION_ALREADY_ACTIVE"
    DAY_CLOSED = "DAY_CLOSED"
    HOLDS_OPEN = "HOLDS_OPEN"
    ALREADY_ALLOCATED = "ALREADY_ALLOCATED"
    RUN_HASH_MISMATCH = "RUN_HASH_MISMATCH"
    REQUEST_HASH_MISMATCH = "REQUEST_HASH_MISMATCH"
    APPROVAL_CAP_EXCEEDED = "APPROVAL_CAP_EXCEEDED"
    ALREADY_RESERVED = "ALREADY_RESERVED"
    ALREADY_PAID = "ALREADY_PAID"
    PAYOUTS_BLOCKED = "PAYOUTS_BLOCKED"
    CLAIM_HELD = "CLAIM_HELD"
    CLAIM_EXPIRED = "CLAIM_EXPIRED"
    RECONCILIATION_REQUIRED = "RECONCILIATION_REQUIRED"
    DISPATCH_DISABLED = "DISPATCH_DISABLED"
    STEP_UP_REQUIRED = "STEP_UP_REQUIRED"
    STEP_UP_INVALID = "STEP_UP_INVALID"
    STEP_UP_EXPIRED = "STEP_UP_EXPIRED"
    ROLE_CONFLICT = "ROLE_CONFLICT"
    HOLD_REASON_MISMATCH = "HOLD_REASON_MISMATCH"

    # Verification of exports, backups and replays.
    VERIFICATION_FAILED = "VERIFICATION_FAILED"
    BACKUP_REPOSITORY_FAILED = "BACKUP_REPOSITORY_FAILED"  # restic could not read or write the repository
    NO_GOOD_BACKUP = "NO_GOOD_BACKUP"


class LedgerError(Exception):
    """An error with a stable code; ``detail`` is for people, ``code`` for programs."""

    def __init__(self, code: ErrorCode, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}" if detail else str(code))
        self.code = code
        self.detail = detail

    def as_dict(self) -> dict[str, str]:
        return {"code": str(self.code), "detail": self.detail}


STORAGE_CODES = frozenset({ErrorCode.LEDGER_NOT_FOUND, ErrorCode.STORAGE_INCOMPLETE, ErrorCode.STORAGE_CORRUPT,
                           ErrorCode.STORAGE_ROLLED_BACK})


class StorageFault(LedgerError):
    """The database cannot be trusted: a file is missing or damaged, or it lost acknowledged writes.

    Never a business rejection: whoever meets one stops, and the owner halts admission.
    """

    def __init__(self, code: ErrorCode, detail: str) -> None:
        assert code in STORAGE_CODES, code
        super().__init__(code, detail)
