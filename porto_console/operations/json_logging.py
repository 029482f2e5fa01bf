"""JSON log lines: one object per record, with the request ID of the request being served, if any.

Fields: ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``,
``message``, ``request_id``, ``process``, ``thread``, ``exception`` (the
formatted traceback, when there is one) and any ``extra`` fields the caller
passed (``halt_cause``, ``status``, ...).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from porto_console.operations.request_id import current_request_id

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "request_id", "request"}  # Django's request object is no log field


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _iso_time(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or current_request_id.get(),
            "process": record.process,
            "thread": record.threadName,
        }
        if record.exc_info and record.exc_info[0] is not None:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        for name, value in vars(record).items():
            if name not in _STANDARD and name not in line:
                line[name] = value
        return orjson.dumps(line, default=str).decode()


def _iso_time(created: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"
