"""Attacks on the console's operations surfaces: forged lines in the text log."""

from __future__ import annotations

import io
import logging

from django.test import Client

from porto_console.operations.json_logging import RequestIdFilter
from porto_console.settings import LOGGING


def test_a_path_with_a_line_break_leaves_one_access_line_in_the_plain_log(ledger):
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(logging.Formatter(LOGGING["formatters"]["plain"]["format"]))
    handler.addFilter(RequestIdFilter())
    access = logging.getLogger("porto.requests")
    access.addHandler(handler)
    try:
        Client().get("/healthz%0D%0A2026-12-01 00:00:00,000 CRITICAL porto.ledger forged line")
    finally:
        access.removeHandler(handler)
    lines = written.getvalue().splitlines()
    assert len(lines) == 1 and "\r" not in written.getvalue(), lines
    assert "%0D%0A" in lines[0]
