"""The console's log: JSON lines through the configured handlers, each with its request's ID; a halt as CRITICAL."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from django.test import Client

from tests.console.operations import DISK_FAULT, halt_with_a_disk_fault


@pytest.fixture
def console_log():
    """New lines of the console's rotating log file, as the configured ``file`` handler wrote them."""
    [handler] = [handler for handler in logging.getLogger("porto").handlers if handler.get_name() == "file"]
    path = Path(handler.baseFilename)
    start = path.stat().st_size if path.exists() else 0

    def lines() -> list[dict]:
        handler.flush()
        with path.open() as log:
            log.seek(start)
            return [json.loads(line) for line in log if line.strip()]

    return lines


def test_a_request_id_from_the_caller_is_in_the_response_and_in_every_line_of_its_request(ledger, settings,
                                                                                          console_log):
    settings.METRICS_TOKEN = "metrics-token-for-the-logging-test-0123456789"
    response = Client(HTTP_X_REQUEST_ID="probe-7.a_b:c").get("/metrics")  # refused: no token
    assert response.status_code == 401 and response["X-Request-ID"] == "probe-7.a_b:c"
    lines = [line for line in console_log() if line["request_id"] == "probe-7.a_b:c"]
    assert {line["logger"] for line in lines} == {"porto.operations.metrics", "porto.requests"}
    access = next(line for line in lines if line["logger"] == "porto.requests")
    assert (access["method"], access["path"], access["status"], access["level"]) == ("GET", "/metrics", 401, "INFO")
    assert access["time"].endswith("Z") and access["duration_ms"] >= 0


@pytest.mark.parametrize("offered", ["two words", "x" * 129, 'quote"}', "line\nbreak"])
def test_a_request_id_that_could_forge_log_structure_is_replaced(ledger, offered, console_log):
    response = Client(HTTP_X_REQUEST_ID=offered).get("/healthz")
    issued = response["X-Request-ID"]
    assert issued != offered and len(issued) == 32 and issued.isalnum()
    assert [line["request_id"] for line in console_log() if line["logger"] == "porto.requests"] == [issued]


def test_each_request_gets_its_own_id_and_lines_outside_requests_have_none(ledger, console_log):
    first, second = (Client().get("/healthz")["X-Request-ID"] for _ in range(2))
    assert first != second
    logging.getLogger("porto.test").warning("outside any request")
    [outside] = [line for line in console_log() if line["logger"] == "porto.test"]
    assert outside["request_id"] is None and outside["level"] == "WARNING"


def test_a_halted_ledger_leaves_a_critical_json_line_with_its_cause(ledger, monkeypatch, console_log):
    halt_with_a_disk_fault(ledger, monkeypatch)
    [line] = [line for line in console_log() if line["logger"] == "porto.ledger"]
    assert line["level"] == "CRITICAL" and "ledger halted" in line["message"] and DISK_FAULT in line["message"]
    assert line["halt_cause"] == "LEDGER_HALTED"
    assert "OSError: disk said no" in line["exception"]
