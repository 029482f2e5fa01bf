"""Behind a TLS proxy: waitress trusts only the proxy's forwarded headers, and Django's cookies and HSTS follow."""

from __future__ import annotations

from pathlib import Path

from porto_console.operations.server import DEFAULT_THREADS, server_options
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
