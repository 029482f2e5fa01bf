"""JSON log lines: one object per record, with the request ID of the request being served, if any.

Fields: ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``,
``message``, ``request_id``, ``process``, ``thread``, ``exception`` (the
formatted traceback, when there is one) and any ``extra`` fields the caller
passed (``halt_cause``, ``status``, ...). ``RedactOneTimeLinks`` cleans each
record of one-time link tokens before any handler writes it
(``log_redaction``).
"""

from __future__ import annotations

import logging
import time

import orjson

from ledger_engine.open_json import Report
from porto_console.operations.log_redaction import redact
from porto_console.operations.request_id import current_request_id

# Attributes every LogRecord has; anything else on a record came from ``extra``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "request_id", "request"}  # Django's request object is no log field


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = current_request_id.get()
        return True


class RedactOneTimeLinks(logging.Filter):
    """The message, the record's own string fields, its traceback and stack, without a one-time link's token."""

    _tracebacks = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record: the handler reports it, with no arguments of ours in it
        if redact(message) != message:
            record.msg, record.args = redact(message), None
        for name, value in list(vars(record).items()):
            if name not in _STANDARD and isinstance(value, str):
                setattr(record, name, redact(value))
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            record.exc_text = self._tracebacks.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: Report = {
            "time": _iso_time(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or current_request_id.get(),
            "process": record.process,
            "thread": record.threadName,
        }
        if record.exc_info and record.exc_info[0] is not None:
            line["exception"] = record.exc_text or self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        for name, value in vars(record).items():
            if name not in _STANDARD and name not in line:
                line[name] = value
        return orjson.dumps(line, default=str).decode()


def _iso_time(created: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"
