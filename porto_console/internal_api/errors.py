"""Stable error codes of the internal API and the HTTP status each one answers with.

Every error body is ``{"code": ..., "detail": ...}``. The ledger's own codes
(``ledger_engine.errors``) keep their spelling; the API adds the few that only
exist at its edge. A 4xx answer to a submit means the ledger journalled
nothing for that request; after a 5xx the command's ID resolves what happened.
"""

from __future__ import annotations

from enum import StrEnum
from http import HTTPStatus

from ledger_engine.errors import ErrorCode


class ApiCode(StrEnum):
    UNAUTHENTICATED = "UNAUTHENTICATED"
    COMMAND_NOT_ALLOWED = "COMMAND_NOT_ALLOWED"
    INVALID_REQUEST = "INVALID_REQUEST"
    EVIDENCE_TOO_LARGE = "EVIDENCE_TOO_LARGE"
    INTERNAL_ERROR = "INTERNAL_ERROR"


class ApiError(Exception):
    """A request refused at the API's edge, before the ledger sees it."""

    def __init__(self, code: ApiCode | ErrorCode, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


_STATUS: dict[str, HTTPStatus] = {
    ErrorCode.MALFORMED_ENVELOPE: HTTPStatus.BAD_REQUEST,
    ApiCode.INVALID_REQUEST: HTTPStatus.BAD_REQUEST,
    ApiCode.UNAUTHENTICATED: HTTPStatus.UNAUTHORIZED,
    ApiCode.COMMAND_NOT_ALLOWED: HTTPStatus.FORBIDDEN,
    ErrorCode.OWNER_ONLY: HTTPStatus.FORBIDDEN,
    ErrorCode.NOT_FOUND: HTTPStatus.NOT_FOUND,
    ErrorCode.INVALID_STATE: HTTPStatus.CONFLICT,  # e.g. a statement file asked for before its root is anchored
    ErrorCode.COMMAND_ID_CONFLICT: HTTPStatus.CONFLICT,
    ErrorCode.COMMAND_TOO_LARGE: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
    ApiCode.EVIDENCE_TOO_LARGE: HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
    ErrorCode.UNKNOWN_FIELD: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.UNSUPPORTED_SCHEMA_VERSION: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.UNKNOWN_COMMAND_TYPE: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.UNSUPPORTED_RULESET: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.INVALID_PAYLOAD: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.INVALID_AMOUNT: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.INVALID_NUMBER: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.INVALID_KEY: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.INVALID_REFERENCE: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.CONFLICTING_EVIDENCE: HTTPStatus.UNPROCESSABLE_ENTITY,
    ErrorCode.LEDGER_HALTED: HTTPStatus.SERVICE_UNAVAILABLE,
    ErrorCode.DISPATCH_DISABLED: HTTPStatus.SERVICE_UNAVAILABLE,
    ErrorCode.LEDGER_ALREADY_OWNED: HTTPStatus.SERVICE_UNAVAILABLE,
    ErrorCode.JSON_TOO_DEEP: HTTPStatus.BAD_REQUEST,
    ErrorCode.DUPLICATE_KEY: HTTPStatus.BAD_REQUEST,
    ErrorCode.STORAGE_CORRUPT: HTTPStatus.SERVICE_UNAVAILABLE,
    ErrorCode.BACKUP_REPOSITORY_FAILED: HTTPStatus.BAD_GATEWAY,  # the repository failed, not the console
}


def http_status(code: str) -> HTTPStatus:
    """The status for ``code``; a code not listed here (a rule failure) is a server error."""
    return _STATUS.get(code, HTTPStatus.INTERNAL_SERVER_ERROR)


def error_body(code: str, detail: str) -> dict[str, str]:
    return {"code": str(code), "detail": detail}
