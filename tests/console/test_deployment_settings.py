"""Behind a TLS proxy: waitress trusts only the proxy's forwarded headers, and Django's cookies and HSTS follow."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from django.core.handlers.wsgi import WSGIHandler

from porto_console.internal_api.api import MAX_BODY_BYTES
from porto_console.operations.server import DEFAULT_THREADS, bind, server_options
from tests.support import settings_module


def settings_under(tmp_path: Path, **environment: str) -> dict:
    """The real settings module as a console started with ``environment`` would read it."""
    return settings_module.settings_under({"PORTO_VAR_DIR": str(tmp_path), **environment})


def test_without_a_proxy_nothing_is_trusted_and_cookies_stay_plain(tmp_path):
    shown = settings_under(tmp_path)
    assert shown["SECURE_PROXY_SSL_HEADER"] is None and not shown["SECURE_HSTS_SECONDS"]
    assert shown["SESSION_COOKIE_SECURE"] is False and shown["CSRF_TRUSTED_ORIGINS"] == []
    assert "trusted_proxy" not in server_options({})


def test_behind_a_proxy_the_scheme_header_cookies_and_hsts_are_secure(tmp_path):
    shown = settings_under(tmp_path, PORTO_TRUSTED_PROXY="127.0.0.1", PORTO_CONSOLE_URL="https://console.porto.example")
    assert shown["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert shown["SECURE_HSTS_SECONDS"] == 365 * 24 * 3600
    assert shown["SESSION_COOKIE_SECURE"] is True and shown["CSRF_COOKIE_SECURE"] is True
    assert shown["CSRF_TRUSTED_ORIGINS"] == ["https://console.porto.example"]
    options = server_options({"PORTO_TRUSTED_PROXY": "127.0.0.1", "PORTO_THREADS": "12"})
    assert (options["trusted_proxy"], options["clear_untrusted_proxy_headers"], options["threads"]) == (
        "127.0.0.1", True, 12)
    assert options["trusted_proxy_headers"] == "x-forwarded-for x-forwarded-proto"
    assert server_options({})["threads"] == DEFAULT_THREADS


def test_the_production_server_refuses_a_declared_oversized_body_without_reading_it():
    """Waitress would buffer up to 1 GiB (to disk) before any view, and so any credential check, runs."""
    server = bind(WSGIHandler(), host="127.0.0.1", port=0)
    threading.Thread(target=server.run, daemon=True).start()
    try:
        with socket.create_connection(("127.0.0.1", server.effective_port), timeout=5) as connection:
            connection.sendall((f"POST /internal/commands HTTP/1.1\r\nHost: localhost\r\n"
                                f"Content-Type: application/json\r\nContent-Length: {100 * MAX_BODY_BYTES}\r\n\r\n{{"
                                ).encode())
            try:
                answer = connection.recv(200)
            except socket.timeout:  # still reading the body nobody will use
                answer = b""
        assert answer.startswith(b"HTTP/1.1 413"), answer
    finally:
        server.close()

