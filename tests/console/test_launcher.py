"""``make run``'s launcher in real child processes: it serves one waitress process, and a second one is refused."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import json

import httpx
import pytest

from ledger_engine.genesis import default_genesis, genesis_hash
from porto_console.settings import DEMO_BACKUP_PASSWORD

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "scripts" / "run_console.py"
STARTUP_GUARD_S = 300  # a guard against a hung child, not a speed requirement

# Each test starts the console as ``make run`` does, in child processes (migrations, the demo, its sign-ins):
# seconds a start, so these run with the long end-to-end tests (docs/adr/0100).
pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launcher_env(var_dir: Path, port: int, **extra: str) -> dict[str, str]:
    """The environment ``make run`` gives the launcher: the real settings, no keys (the demo brings its own)."""
    env = {name: value for name, value in os.environ.items()
           if name not in ("DATABASE_URL", "DJANGO_SECRET_KEY", "PORTO_HANDLE_KEY", "PORTO_STEP_UP_KEY",
                           "PORTO_GENESIS_HASH", "PORTO_IDENTITY_KEY", "PORTO_CHECKPOINT_KEY")}
    return {**env, "DJANGO_SETTINGS_MODULE": "porto_console.settings", "PORTO_VAR_DIR": str(var_dir),
            "DATA_DIR": str(var_dir / "ledger"), "PORT": str(port), **extra}


class Console:
    """A launched console; ``output`` collects what it printed until it said it is serving."""

    def __init__(self, var_dir: Path, **extra: str) -> None:
        self.var_dir = var_dir
        self.port = free_port()
        self.process = subprocess.Popen([sys.executable, str(LAUNCHER)],
                                        env=launcher_env(var_dir, self.port, **extra),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.output: list[str] = []
        self.serving = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.output.append(line)
            if line.startswith("serving the console at"):
                self.serving.set()

    def password(self, username: str) -> str:
        for line in self.output:
            found = re.match(rf"\s+{re.escape(username)}\s+\S+\s+password (\S+)", line)
            if found:
                return found.group(1)
        raise AssertionError(f"no password printed for {username}")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=STARTUP_GUARD_S)


def with_demo_repository(var_dir: Path, initialised_repository) -> Path:
    """``var_dir`` with the demo's backup repository already initialised (``tests/support/restic.py``): a launched
    console's first backup goes there, as it would into one ``restic init`` made. The first backup into a location
    where nothing is yet is tested in ``tests/effects/test_backups.py``."""
    initialised_repository(var_dir / "backups", DEMO_BACKUP_PASSWORD)
    return var_dir


def started(var_dir: Path, **extra: str) -> Console:
    """A console launched on ``var_dir``, with ``extra`` added to its environment, once it says it is serving."""
    console = Console(var_dir, **extra)
    assert console.serving.wait(STARTUP_GUARD_S), "".join(console.output) + console.process.stderr.read()
    return console


@pytest.fixture(scope="module")
def console(tmp_path_factory, initialised_repository):
    """One console, launched as ``make run`` launches it on a fresh directory, for this module's tests; the
    restart test, last, stops it itself. It stops cleanly."""
    launched = started(with_demo_repository(tmp_path_factory.mktemp("launched"), initialised_repository))
    yield launched
    if launched.process.poll() is None:
        assert launched.stop() == 0


def sign_in(port: int, username: str, password: str) -> httpx.Response:
    """Sign in through the login form; the page the console then lands on."""
    with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        login = client.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        return client.post("/login/?next=/", data={"csrfmiddlewaretoken": token, "username": username,
                                                   "password": password}, follow_redirects=True)


def test_a_printed_demo_user_can_sign_in_and_lands_on_demo_data(console):
    signed_in = sign_in(console.port, "demo-finance-2", console.password("demo-finance-2"))
    assert str(signed_in.url).endswith("/ledger/")
    assert "DEMO DATA" in signed_in.text and "Dashboard" in signed_in.text


def test_the_console_serves_under_waitress_with_health_and_json_logs(console):
    response = httpx.get(f"http://127.0.0.1:{console.port}/healthz", headers={"X-Request-ID": "launcher-probe"})
    assert (response.status_code, response.json()["status"]) == (200, "ready")
    assert response.headers["server"] == "porto" and response.headers["x-request-id"] == "launcher-probe"
    logged = [json.loads(line) for line in (console.var_dir / "log" / "console.log").read_text().splitlines()]
    assert {"logger": "porto.requests", "path": "/healthz", "status": 200, "request_id": "launcher-probe"}.items() <= \
        next(line for line in logged if line.get("request_id") == "launcher-probe").items()


def test_a_second_console_on_the_same_ledger_exits_with_a_clear_reason(console):
    second = subprocess.run([sys.executable, str(LAUNCHER)], env=launcher_env(console.var_dir, free_port()),
                            capture_output=True, text=True, timeout=STARTUP_GUARD_S)
    assert second.returncode == 3
    assert "cannot start" in second.stderr and "already open read-write by another owner process" in second.stderr
    assert console.process.poll() is None  # the first serves on, and stops cleanly at the end of the module


def test_outside_the_demo_the_console_refuses_to_start_with_default_keys(tmp_path):
    """A ledger that is not the labelled demo: the default SECRET_KEY and missing keys stop the server."""
    subprocess.run([str(Path(sys.executable).with_name("porto-ledger")), "--data", str(tmp_path / "ledger"), "init"],
                   check=True, capture_output=True, timeout=STARTUP_GUARD_S)
    refused = subprocess.run([sys.executable, str(LAUNCHER)], env=launcher_env(tmp_path, free_port()),
                             capture_output=True, text=True, timeout=STARTUP_GUARD_S)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "cannot start: this is not the labelled demo ledger" in refused.stderr
    for key in ("DJANGO_SECRET_KEY", "PORTO_HANDLE_KEY", "PORTO_STEP_UP_KEY", "PORTO_GENESIS_HASH", "PORTO_IDENTITY_KEY",
                "PORTO_CHECKPOINT_KEY"):
        assert key in refused.stderr
    assert "serving the console" not in refused.stdout


def test_a_deployment_pinned_to_its_own_genesis_never_makes_a_demo_ledger_of_an_empty_directory(tmp_path):
    """An emptied data directory must not come back as the demo (whose label would otherwise pass for safe)."""
    pinned = genesis_hash(default_genesis())
    refused = subprocess.run([sys.executable, str(LAUNCHER)],
                             env=launcher_env(tmp_path, free_port(), PORTO_GENESIS_HASH=pinned),
                             capture_output=True, text=True, timeout=STARTUP_GUARD_S)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "cannot start: no ledger at" in refused.stderr and "names a genesis other than the demo's" in refused.stderr
    assert not (tmp_path / "ledger").exists() or not any((tmp_path / "ledger").iterdir())


def test_a_restart_keeps_every_demo_sign_in_and_prints_no_password(console):
    """``make run`` again on the same directories: the second start resets no sign-in and prints no secret."""
    password = console.password("demo-finance-2")
    assert console.stop() == 0
    second = started(console.var_dir)
    try:
        printed = "".join(second.output)
        assert "password" not in printed and "TOTP secret" not in printed
        assert "manage.py demo_credentials" in printed
        assert str(sign_in(second.port, "demo-finance-2", password).url).endswith("/ledger/")
    finally:
        assert second.stop() == 0
