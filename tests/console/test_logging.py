"""The console's log: JSON lines through the configured handlers, each with its request's ID; a halt as CRITICAL;
requests by their route, and never a one-time link's token."""

from __future__ import annotations

import io
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


# One-time links: a request is logged by its route, and no line holds a link's token.

TOKEN = "tok3n-that-only-its-owner-reads-0123456789abcdef"


def test_an_enrolment_links_request_is_logged_by_its_route_not_its_token(ledger, db, console_log):
    response = Client(HTTP_X_REQUEST_ID="one-time-link").get(f"/enrol/{TOKEN}/")
    assert response.status_code == 404  # no such link: the line is the same either way
    [access] = [line for line in console_log() if line["request_id"] == "one-time-link"]
    assert (access["path"], access["message"]) == ("/enrol/<str:token>/", "GET /enrol/<str:token>/ 404")


def test_a_server_error_on_a_tokenised_route_logs_its_traceback_without_the_token(ledger, db, monkeypatch,
                                                                                  console_log):
    from porto_console.console.services import enrolment

    def fail(token: str):
        raise RuntimeError(f"the link store failed for /enrol/{token}/")

    monkeypatch.setattr(enrolment, "link_for", fail)
    assert Client(raise_request_exception=False).get(f"/enrol/{TOKEN}/").status_code == 500
    lines = console_log()
    [error] = [line for line in lines if line["logger"] == "django.request"]
    assert error["message"] == "Internal Server Error: /enrol/<redacted>/"
    assert "RuntimeError: the link store failed for /enrol/<redacted>/" in error["exception"]
    assert lines and not [line for line in lines if TOKEN in json.dumps(line)]


@pytest.mark.parametrize(("path", "logged"), [
    (f"/enrol/{TOKEN}%0A/x", "/enrol/<redacted>/x"),  # matches no route: still no token
    ("/nowhere%0A", "/nowhere%0A"),  # an unmatched path holds no secret of ours: logged as sent, re-encoded
])
def test_a_path_no_route_matches_is_logged_as_sent_unless_under_a_one_time_links_prefix(ledger, path, logged,
                                                                                        console_log):
    Client(HTTP_X_REQUEST_ID="unmatched").get(path)
    [access] = [line for line in console_log() if line["request_id"] == "unmatched"]
    assert access["path"] == logged


@pytest.mark.parametrize("log_format", ["json", "plain"])
def test_any_loggers_line_with_a_one_time_link_is_redacted_in_either_format(log_format):
    from porto_console.operations.json_logging import JsonFormatter, RedactOneTimeLinks, RequestIdFilter
    from porto_console.settings import LOGGING

    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(
        LOGGING["formatters"]["plain"]["format"]))
    handler.addFilter(RequestIdFilter())
    handler.addFilter(RedactOneTimeLinks())
    server = logging.getLogger("waitress")
    server.addHandler(handler)
    try:
        try:
            raise ValueError(f"no such link http://console.test/enrol/{TOKEN}/")
        except ValueError:
            server.exception("Exception while serving %s", f"/enrol/{TOKEN}/", extra={"url": f"/enrol/{TOKEN}/"})
    finally:
        server.removeHandler(handler)
    text = written.getvalue()
    assert TOKEN not in text and "/enrol/<redacted>/" in text and "ValueError: no such link" in text
