"""The internal worker API: typed commands and reads for effect workers, never a generic write.

Workers authenticate with their own bearer credential (``credentials``). The
only way to change the ledger is a typed command the credential allows
(``commands``); the reads are the head, dispatch, the effects queue, payments and
in-flight attempts (``reads``); evidence bytes are stored by digest before a
command names them (``evidence``); maintenance workers ask for verified backups
(``maintenance``).
This module is the HTTP edge: authentication, the body cap, the error bodies, and
the 404 for any path under ``/internal/`` that no route matches.
"""

from __future__ import annotations

import logging
from functools import wraps
from typing import Any, Callable

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationErrorContext
from ninja.parser import Parser

from ledger_engine.canonical import parse_json
from ledger_engine.envelope import MAX_ENVELOPE_BYTES, pydantic_error_code
from ledger_engine.errors import ErrorCode, LedgerError
from porto_console.internal_api import batches, commands, evidence, maintenance, reads
from porto_console.internal_api.credentials import WorkerBearer
from porto_console.internal_api.errors import ApiCode, ApiError, error_body, http_status
from porto_console.ledger import gateway

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = MAX_ENVELOPE_BYTES
# Every answer names the ledger's admission clock, so a worker whose own clock is off still leases by the ledger's.
LEDGER_TIME_HEADER = "X-Porto-Ledger-Time-Ms"

DESCRIPTION = f"""\
For effect workers only. Each worker has its own bearer credential, naming the
ledger actor it acts as and the command types it may submit; the ledger checks
that actor's roles again.

**Errors.** Every error body is `{{"code": ..., "detail": ...}}` with a stable code:
400 `MALFORMED_ENVELOPE` (not JSON, not an object, missing or mistyped fields), `JSON_TOO_DEEP`
(nested deeper than 32 levels), `DUPLICATE_KEY` (a key repeated in any object) or
`INVALID_REQUEST` (query, path or an empty evidence body); 401 `UNAUTHENTICATED`; 403 `COMMAND_NOT_ALLOWED`
(a command type the credential does not carry, a read of effects, payments, attempts or batches,
which name payout addresses, by a credential that carries out no effects, or evidence stored by a
credential that submits no command citing evidence);
404 `NOT_FOUND` (also any path under `/internal/` that no route matches); 409 `COMMAND_ID_CONFLICT`;
413 `COMMAND_TOO_LARGE` (bodies over {MAX_BODY_BYTES} bytes, refused before they are read) or
`EVIDENCE_TOO_LARGE` (evidence over {evidence.MAX_EVIDENCE_BYTES} bytes); 422 `UNKNOWN_FIELD`, `INVALID_PAYLOAD`,
`INVALID_AMOUNT`, `INVALID_NUMBER`, `INVALID_KEY`, `INVALID_REFERENCE`, `UNKNOWN_COMMAND_TYPE`;
503 `LEDGER_HALTED` or `DISPATCH_DISABLED` (`ClaimEffect` and `RecordSignedAttempt` after a restore,
until an operator resumes dispatch). A 4xx answer to a submit means the ledger journalled nothing for it;
after a 5xx, resolve the command by its ID (`GET /internal/commands/{{command_id}}`).

**The ledger's clock.** Every answer carries `X-Porto-Ledger-Time-Ms`, the time the console admits commands
at: a claim's `expires_at_ms` is reckoned from it, not from the worker's own clock.

**Business rejections are not errors.** A command the ledger admits is journalled
with a sequence whether it is accepted or rejected, so both answer 200 with the
outcome; a rejection (`STALE_REVISION`, `CAPABILITY_MISSING`, `CLAIM_HELD`, ...) has
`"outcome": "rejected"` and its code, and the same command ID can never later succeed.
"""


class WorkerApi(NinjaAPI):
    def validation_error_from_error_contexts(  # type: ignore[override]  # ninja only raises it: an ApiError does
            self, error_contexts: list[ValidationErrorContext]) -> Exception:
        """Map the first invalid input to the ledger's stable codes instead of ninja's error list."""
        context = error_contexts[0]
        default = ErrorCode.MALFORMED_ENVELOPE if context.model.__ninja_param_source__ == "body" \
            else ApiCode.INVALID_REQUEST
        return ApiError(*pydantic_error_code(context.pydantic_validation_error, default))


class LedgerJsonParser(Parser):
    """Bodies through the ledger's one JSON text boundary: depth limit, duplicate keys refused."""

    def parse_body(self, request: HttpRequest) -> Any:
        return parse_json(request.body)


api = WorkerApi(title="Porto internal worker API", version="1", urls_namespace="internal",
                description=DESCRIPTION, auth=WorkerBearer(), docs_decorator=staff_member_required,
                parser=LedgerJsonParser())


def error_response(request: HttpRequest, code: str, detail: str) -> HttpResponse:
    status = http_status(code)
    response = api.create_response(request, error_body(code, detail), status=status)
    if status == 401:
        response["WWW-Authenticate"] = "Bearer"
    return response


def cap_body(run: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Refuse an oversized body from its declared length, before anything reads it."""

    @wraps(run)
    def capped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django reads no body when the length is not a number
        if length > MAX_BODY_BYTES:
            return error_response(request, ErrorCode.COMMAND_TOO_LARGE,
                                  f"the body is {length} bytes; the limit is {MAX_BODY_BYTES}")
        return run(request, *args, **kwargs)

    return capped


def stamp_ledger_time(run: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Every answer carries the ledger's admission clock (ms since the epoch) in ``X-Porto-Ledger-Time-Ms``."""

    @wraps(run)
    def stamped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = run(request, *args, **kwargs)
        response[LEDGER_TIME_HEADER] = str(gateway().now_ms())
        return response

    return stamped


@csrf_exempt
def unrouted(request: HttpRequest) -> HttpResponse:
    """Anything under ``/internal/`` that no route matches: the API's 404, never the console's login page."""
    return error_response(request, ErrorCode.NOT_FOUND, f"no internal API route for {request.method} {request.path}")


@api.exception_handler(ApiError)
@api.exception_handler(LedgerError)
def refused(request: HttpRequest, error: ApiError | LedgerError) -> HttpResponse:
    return error_response(request, error.code, error.detail)


@api.exception_handler(AuthenticationError)
def unauthenticated(request: HttpRequest, error: AuthenticationError) -> HttpResponse:
    return error_response(request, ApiCode.UNAUTHENTICATED, "send Authorization: Bearer <worker credential>")


@api.exception_handler(HttpError)
def unparseable(request: HttpRequest, error: HttpError) -> HttpResponse:
    """Ninja raises this for a body it cannot parse."""
    return error_response(request, ErrorCode.MALFORMED_ENVELOPE, "the body is not valid JSON")


@api.exception_handler(Exception)
def internal_error(request: HttpRequest, error: Exception) -> HttpResponse:
    logger.exception("internal API request failed")
    return error_response(request, ApiCode.INTERNAL_ERROR,
                          "internal error; resolve the command by its ID before retrying it")


api.add_decorator(cap_body, mode="view")
api.add_decorator(stamp_ledger_time, mode="view")
api.add_router("", commands.router)
api.add_router("", batches.router)
api.add_router("", reads.router)
api.add_router("", evidence.router)
api.add_router("", maintenance.router)
