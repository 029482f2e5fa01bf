"""The private security log: refusals before admission, as JSON lines in a rotating file.

Authentication and schema failures come here rather than to the ledger
(docs/spec/engine-and-journal.md §11). Each line is one JSON object: ``at_ms``, ``event``, ``code``,
``detail`` and whatever identifies the attempt (``command_id``,
``actor_id``, ``source``). The file is rotated at ``MAX_BYTES`` keeping
``BACKUPS`` old files (``.1`` newest). It never holds credentials or payloads.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

import orjson

from ledger_engine.environment import read_engine_environment

MAX_BYTES = 16 * 1024 * 1024
BACKUPS = 10


def default_path(data_dir: str | os.PathLike[str]) -> Path:
    """Beside the ledger directory: ``var/ledger`` logs to ``var/ledger.security.jsonl``."""
    data = Path(data_dir).resolve()
    return data.with_name(data.name + ".security.jsonl")


def configured_path(data_dir: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> Path:
    """``$PORTO_SECURITY_LOG`` (in ``environ``, or this process's environment) when set, else ``default_path``."""
    return read_engine_environment(environ).security_log or default_path(data_dir)


class SecurityLog:
    def __init__(self, path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handler = RotatingFileHandler(self.path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self._handler.setFormatter(logging.Formatter("%(message)s"))

    def record(self, event: str, code: str, detail: str, **identifiers: Any) -> None:
        line = {"at_ms": time.time_ns() // 1_000_000, "event": event, "code": code, "detail": detail,
                **{name: value for name, value in identifiers.items() if value is not None}}
        message = orjson.dumps(line, option=orjson.OPT_SORT_KEYS).decode()
        self._handler.handle(logging.makeLogRecord({"msg": message, "levelno": logging.WARNING,
                                                     "levelname": "WARNING", "name": "porto.security"}))

    def close(self) -> None:
        self._handler.close()
