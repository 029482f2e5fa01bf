"""A private ``redis-server`` for the effects tests: Debian's binary, a temporary directory, a free port.

The tests never use a Redis they did not start (``make test`` installs
Debian's ``redis-server`` where it is missing). ``PORTO_TEST_REDIS_URL``
points them at another server only when it is set explicitly together with
``PORTO_TEST_EXTERNAL_REDIS=1``. The server keeps no data on disk, like a
broker that lost its memory when it is killed: the sweep, not the broker,
is what brings lost work back.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from tests.effects.process_group import ServerProcess

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
START_SECS = 10.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer(ServerProcess):
    """One ``redis-server`` process on loopback that tests can kill and start again on the same port."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        assert os.path.exists(REDIS_SERVER), "redis-server is missing: `make test` installs Debian's redis-server"
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.process: subprocess.Popen | None = None

    def url(self, database: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{database}"

    def start(self) -> "RedisServer":
        assert self.process is None or self.process.poll() is not None, "redis-server is already running"
        log = open(self.directory / "redis.log", "ab")
        self.process = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.directory), "--daemonize", "no", "--protected-mode", "yes"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_until_it_answers()
        return self

    def _wait_until_it_answers(self) -> None:
        deadline = time.monotonic() + START_SECS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"redis-server exited: {(self.directory / 'redis.log').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as connection:
                    connection.sendall(b"PING\r\n")
                    if connection.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"redis-server did not answer on port {self.port}")


def external_redis_url() -> str | None:
    """A Redis the caller insists on (``PORTO_TEST_EXTERNAL_REDIS=1`` and ``PORTO_TEST_REDIS_URL``), else None."""
    if os.environ.get("PORTO_TEST_EXTERNAL_REDIS") == "1":
        return os.environ["PORTO_TEST_REDIS_URL"]
    return None
