"""``make run`` twice on the same directories: the second start resets no sign-in and prints no secret."""

from __future__ import annotations

import re

import httpx

from tests.console.test_launcher import STARTUP_GUARD_S, Console, var_dir  # noqa: F401 (a fixture)


def started(var_dir) -> Console:
    console = Console(var_dir)
    assert console.serving.wait(STARTUP_GUARD_S), "".join(console.output) + console.process.stderr.read()
    return console


def signs_in(port: int, username: str, password: str) -> bool:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        login = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        answer = client.post("/login/?next=/", data={"csrfmiddlewaretoken": token, "username": username,
                                                     "password": password}, follow_redirects=True)
    return str(answer.url).endswith("/ledger/")


def test_a_restart_keeps_every_demo_sign_in_and_prints_no_password(var_dir):
    first = started(var_dir)
    password = first.password("demo-finance-2")
    assert first.stop() == 0
    second = started(var_dir)
    try:
        printed = "".join(second.output)
        assert "password" not in printed and "TOTP secret" not in printed
        assert "manage.py demo_credentials" in printed
        assert signs_in(second.port, "demo-finance-2", password)
    finally:
        assert second.stop() == 0
