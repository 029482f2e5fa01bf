"""What the peer benchmarks share: the deposits every side records, PostgreSQL's durability, a peer's process.

Every side records the same deposits (a lot id, an amount in micro-units and
the on-chain reference with its evidence digest), in the same order, into its
own store. Each peer runs in a process of its own (``python -m
benchmarks.peer_NAME``) so that its framework's settings, Django's above all,
never meet the engine's or another peer's; it answers one JSON request per
line and times its own work, so the pipe costs nothing in the figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Protocol
from urllib.parse import urlsplit, urlunsplit

from ledger_engine.demo.builder import fixture_digest

ROOT = Path(__file__).resolve().parent.parent
SERVER_URL_VARIABLE = "PEERS_POSTGRES_URL"
DEFAULT_SERVER_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DATABASE_URL_VARIABLE = "PEER_DATABASE_URL"
DATABASES = {"hordak": "porto_bench_hordak", "eventsourcing": "porto_bench_eventsourcing"}
AMOUNT_UNIT = 80_000  # micro-units: whole cents, so two decimal places hold every amount exactly
MICRO_UNITS = 1_000_000
DURABLE_SETTINGS = ("synchronous_commit", "fsync")


class NotDurable(Exception):
    """The peer's own connection would acknowledge a commit before it is on disk: its figures are void."""


class PeerFailed(Exception):
    """A peer's process refused a request or died; the benchmark fails with its traceback."""


@dataclass(frozen=True)
class Deposit:
    lot_id: str
    amount: int  # micro-units of USDC
    chain: str
    transaction_hash: str
    event_index: int
    evidence_digest: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def deposits(first: int, count: int) -> list[Deposit]:
    """The deposits numbered ``first`` to ``first + count - 1``: the same for every side."""
    return [_deposit(number) for number in range(first, first + count)]


def _deposit(number: int) -> Deposit:
    lot_id = f"peer-lot-{number:08d}"
    return Deposit(lot_id=lot_id, amount=AMOUNT_UNIT * (1 + number % 50), chain="simulated",
                   transaction_hash=fixture_digest(lot_id, "tx"), event_index=0,
                   evidence_digest=fixture_digest(lot_id, "deposit"))


def total_amount(first: int, count: int) -> int:
    return sum(deposit.amount for deposit in deposits(first, count))


def server_url() -> str:
    """The PostgreSQL server the peers use: ``PEERS_POSTGRES_URL``, else the local one ``make bench`` prepares."""
    return os.environ.get(SERVER_URL_VARIABLE, DEFAULT_SERVER_URL)


def database_url(server: str, database: str) -> str:
    parts = urlsplit(server)
    return urlunsplit((parts.scheme, parts.netloc, f"/{database}", parts.query, parts.fragment))


def durability(show: Callable[[str], str]) -> dict[str, str]:
    """The durability settings as the connection ``show`` runs ``SHOW`` on sees them; raises unless all are on."""
    settings = {name: show(name) for name in DURABLE_SETTINGS}
    off = {name: value for name, value in settings.items() if value != "on"}
    if off:
        raise NotDurable(f"PostgreSQL commits are not durable on this connection: {off}")
    return settings


class Peer(Protocol):
    """One peer, inside its own process."""

    def reset(self) -> None:
        """Empty tables of the peer's own schema, its accounts in place."""

    def durability(self) -> dict[str, str]: ...

    def record(self, batch: list[Deposit], per_commit: int) -> None:
        """Record ``batch`` durably, ``per_commit`` deposits in each database transaction."""

    def stored(self) -> dict[str, int]:
        """What the peer's tables hold, counted back, to check against what was recorded."""


def serve(peer: Peer) -> None:
    """Answer requests from stdin until it closes; anything the libraries print goes to stderr."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = {"ok": _answer(peer, request)}
        except Exception:
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps(reply) + "\n")


def _answer(peer: Peer, request: dict[str, Any]) -> Any:
    operation = request["op"]
    if operation == "reset":
        peer.reset()
        return None
    if operation == "durability":
        return peer.durability()
    if operation == "stored":
        return peer.stored()
    if operation == "record":
        batch = deposits(request["first"], request["count"])
        started = time.perf_counter()
        peer.record(batch, request["per_commit"])
        return time.perf_counter() - started
    raise ValueError(f"unknown request {operation!r}")


class PeerProcess:
    """``python -m benchmarks.peer_NAME`` serving requests on its stdin, its database given in the environment."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        environment = {**os.environ, DATABASE_URL_VARIABLE: url,
                       "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        environment.pop("DJANGO_SETTINGS_MODULE", None)
        self.process = subprocess.Popen([sys.executable, "-m", f"benchmarks.peer_{name}"], cwd=ROOT,
                                        env=environment, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def call(self, op: str, **arguments: Any) -> Any:
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise PeerFailed(f"{self.name}: the peer's process ended (exit status {self.process.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise PeerFailed(f"{self.name}: {reply['error']}")
        return reply["ok"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)

    def __enter__(self) -> "PeerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None and exc[0] is not None:
            self.process.kill()
        self.close()
