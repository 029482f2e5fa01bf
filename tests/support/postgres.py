"""A PostgreSQL server for tests: ``DATABASE_URL``'s server when set, else a temporary cluster of this run's own.

The temporary cluster is made with ``initdb`` and started with ``pg_ctl`` on a
free loopback port (trust authentication, no fsync: it holds nothing worth
keeping); it is stopped and deleted at the end. As root (``initdb`` refuses
root) it runs as the ``postgres`` system user. Each test session gets a
uniquely named database on whichever server, dropped at the end, so runs on
one shared server never see each other's tables.

``tests/conftest.py`` registers this module as a plugin, so any test may ask
for ``postgres_database_url`` (this session's database) or
``postgres_server_url`` (the server's maintenance database, to make more);
outside pytest, ``postgres_server()`` and ``temporary_database()`` do the
same.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

BIN_DIRS = ("/usr/local/bin", "/usr/lib/postgresql/15/bin")
SYSTEM_USER = "postgres"


def _tool(name: str) -> str:
    for directory in BIN_DIRS:
        candidate = Path(directory) / name
        if candidate.exists():
            return str(candidate)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} is not installed: install postgresql to run the PostgreSQL tests")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class TemporaryCluster:
    """One throwaway PostgreSQL cluster in its own directory, on a free port of 127.0.0.1."""

    def __init__(self, directory: Path, *, durable: bool = False) -> None:
        self.directory = directory
        self.durable = durable
        self.data = directory / "data"
        self.port = _free_port()

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> "TemporaryCluster":
        self._as_owner_of(self.directory)
        self._run(_tool("initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.directory}"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._run(_tool("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.directory / "server.log"),
                  "-w", "-t", "60", "start")
        return self

    def stop(self) -> None:
        self._run(_tool("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(self.directory, ignore_errors=True)

    def _run(self, *command: str, check: bool = True) -> None:
        prefix = ["runuser", "-u", SYSTEM_USER, "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120)
        if check and done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr or done.stdout}")

    @staticmethod
    def _as_owner_of(directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            owner = pwd.getpwnam(SYSTEM_USER)
            os.chown(directory, owner.pw_uid, owner.pw_gid)


@contextmanager
def postgres_server(*, durable: bool = False) -> Iterator[str]:
    """The URL of a server's maintenance database: ``DATABASE_URL``'s server, or a temporary cluster.

    A temporary cluster skips fsync unless ``durable`` (benchmarks measure the real cost).
    """
    configured = os.environ.get("DATABASE_URL")
    if configured:
        yield _with_database(configured, "postgres")
        return
    cluster = TemporaryCluster(Path(tempfile.mkdtemp(prefix="porto-pg-")), durable=durable).start()
    try:
        yield cluster.url
    finally:
        cluster.stop()


@contextmanager
def temporary_database(server_url: str, prefix: str = "porto_test") -> Iterator[str]:
    """A new, uniquely named database on the server; its URL. Dropped afterwards, whoever is still connected."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield _with_database(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_database_url(postgres_server_url: str) -> Iterator[str]:
    """This test session's own database (see the module's docstring)."""
    with temporary_database(postgres_server_url) as url:
        yield url
