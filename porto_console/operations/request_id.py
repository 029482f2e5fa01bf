"""A request ID for every request: the caller's ``X-Request-ID`` if it is a plain token, else a new one.

It is set in a context variable for the request's thread, so every log line
written while serving it carries the ID (``json_logging.RequestIdFilter``),
and it is returned in the response's ``X-Request-ID`` header. Each request
also leaves one access line on ``porto.requests``: method, the route it
matched (``log_redaction.loggable_path``: never the path of a one-time link,
nor any query string), status and duration.
"""

from __future__ import annotations

import contextvars
import logging
import re
import time
import uuid

from porto_console.operations.log_redaction import loggable_path

HEADER = "X-Request-ID"
_META_KEY = "HTTP_X_REQUEST_ID"
# A caller's ID is kept only if it cannot forge log structure: letters, digits and . _ - : only.
_ACCEPTED = re.compile(r"[A-Za-z0-9._:-]{1,128}")

current_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("porto_request_id", default=None)
access_log = logging.getLogger("porto.requests")


def request_id_from(meta: dict) -> str:
    offered = meta.get(_META_KEY, "")
    return offered if _ACCEPTED.fullmatch(offered) else uuid.uuid4().hex


class RequestIdMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        request_id = request_id_from(request.META)
        request.request_id = request_id
        token = current_request_id.set(request_id)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
            response[HEADER] = request_id
            path = loggable_path(request)
            access_log.info("%s %s %s", request.method, path, response.status_code, extra={
                "method": request.method, "path": path, "status": response.status_code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3)})
            return response
        finally:
            current_request_id.reset(token)
