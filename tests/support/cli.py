"""Driving ``porto-ledger`` the way operators and scripts do: in child processes.

Every verb prints one JSON object a line; ``CliRun.lines`` holds them decoded.
In the fast tier (docs/adr/0064) a verb whose test asks nothing of the process
(no hash seed of its own) runs ``ledger_engine.cli.main`` in this process with
its standard streams and environment swapped, so the test does not wait for an
interpreter to start and import the engine; ``make test`` runs every verb in a
child process.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson

from ledger_engine import cli as ledger_cli
from ledger_engine.demo import demo_genesis
from tests.support import tiers

PORTO_LEDGER = Path(sys.executable).with_name("porto-ledger")

# A guard against a hung child, not a speed requirement.
CHILD_TIMEOUT_S = 600

# Opens the ledger as its owner in a child process and holds it until stdin closes; an error is
# reported as the CLI reports one, with the CLI's exit status.
_OWNER_PROCESS = """
import sys
import orjson
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.cli import EXIT_CODES
from ledger_engine.errors import LedgerError

try:
    owner = LedgerOwner.open(sys.argv[1])
except LedgerError as error:
    print(orjson.dumps({"ok": False, **error.as_dict()}).decode(), flush=True)
    sys.exit(EXIT_CODES.get(error.code, 2))
with owner:
    print(orjson.dumps({"ok": True}).decode(), flush=True)
    sys.stdin.read()
"""


@dataclass(frozen=True)
class CliRun:
    status: int
    lines: list[dict[str, Any]]
    stderr: str
    output: bytes = b""  # standard output as printed

    @property
    def last(self) -> dict[str, Any]:
        return self.lines[-1]


def command_line(*args: object, data: Path | None = None) -> list[str]:
    data_option = ["--data", str(data)] if data is not None else []
    return [str(PORTO_LEDGER), *data_option, *map(str, args)]


def child_env(hash_seed: int | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **(extra or {})}
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = str(hash_seed)
    return env


def json_lines(output: bytes) -> list[dict[str, Any]]:
    """Every complete line of output; a line cut short by a killed child is no answer."""
    complete = output[: output.rfind(b"\n") + 1]
    return [orjson.loads(line) for line in complete.splitlines() if line.strip()]


def run_child(argv: list[str], *, hash_seed: int | None = None, env: dict[str, str] | None = None) -> CliRun:
    """Run to completion with stdin closed; ``env`` adds variables to this process's environment."""
    completed = subprocess.run(argv, input=b"", capture_output=True, env=child_env(hash_seed, env),
                               timeout=CHILD_TIMEOUT_S)
    return CliRun(completed.returncode, json_lines(completed.stdout), completed.stderr.decode(), completed.stdout)


def porto_ledger(*args: object, data: Path | None = None, hash_seed: int | None = None,
                 env: dict[str, str] | None = None) -> CliRun:
    argv = command_line(*args, data=data)
    if tiers.FAST and hash_seed is None:
        return run_in_process(argv[1:], env=env)
    return run_child(argv, hash_seed=hash_seed, env=env)


def run_in_process(args: list[str], *, env: dict[str, str] | None = None) -> CliRun:
    """``porto-ledger ARGS`` as ``ledger_engine.cli.main``, with stdin closed and ``env`` added, in this process."""
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    stderr = io.StringIO()
    saved_streams, saved_env = (sys.stdin, sys.stdout, sys.stderr), dict(os.environ)
    os.environ.update(env or {})
    sys.stdin, sys.stdout, sys.stderr = io.TextIOWrapper(io.BytesIO()), stdout, stderr
    try:
        status = ledger_cli.main(args)
    except SystemExit as exit:  # argparse refusing the command line
        status = exit.code if isinstance(exit.code, int) else 2
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.environ.clear()
        os.environ.update(saved_env)
    output = stdout.buffer.getvalue()
    return CliRun(status, json_lines(output), stderr.getvalue(), output)


def succeeded(run: CliRun) -> CliRun:
    assert run.status == 0, f"porto-ledger exited {run.status}: {run.lines[-3:]} {run.stderr[-2000:]}"
    return run


def spawn(*args: object, data: Path | None = None, **popen_options: Any) -> subprocess.Popen:
    return subprocess.Popen(command_line(*args, data=data), env=child_env(), **popen_options)


@dataclass(frozen=True)
class InterruptedRun:
    """A child that was SIGKILLed (or finished first): every complete line it printed."""

    lines: list[dict[str, Any]]
    killed: bool
    status: int
    stderr: str


def kill_during(*args: object, data: Path | None = None, after_lines: int, delay_s: float) -> InterruptedRun:
    """Run a verb and SIGKILL it ``delay_s`` seconds after it has printed ``after_lines`` lines."""
    with tempfile.TemporaryFile() as errors:
        with spawn(*args, data=data, stdout=subprocess.PIPE, stderr=errors) as child:
            printed = bytearray()
            while printed.count(b"\n") < after_lines and (line := child.stdout.readline()):
                printed += line
            timer = threading.Timer(delay_s, child.kill)
            timer.start()
            printed += child.stdout.read()  # to the end: the child has exited or been killed
            child.wait(timeout=CHILD_TIMEOUT_S)
            timer.cancel()
        errors.seek(0)
        return InterruptedRun(json_lines(bytes(printed)), child.returncode == -signal.SIGKILL, child.returncode,
                              errors.read().decode())


def open_owner_in_subprocess(data: Path) -> CliRun:
    """``LedgerOwner.open`` in a fresh process that closes the ledger again at once."""
    return run_child([sys.executable, "-c", _OWNER_PROCESS, str(data)])


@contextmanager
def owner_in_subprocess(data: Path) -> Iterator[None]:
    """Another process owns the ledger for the duration of the block."""
    with subprocess.Popen([sys.executable, "-c", _OWNER_PROCESS, str(data)], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE) as child:
        assert orjson.loads(child.stdout.readline()) == {"ok": True}
        yield
        child.stdin.close()
        assert child.wait(timeout=CHILD_TIMEOUT_S) == 0


# The verbs most tests need, asserting success.

def init(data: Path, *, hash_seed: int | None = None, genesis: dict[str, Any] | None = None) -> dict[str, Any]:
    """``porto-ledger init``, from ``genesis`` (written beside ``data``) or the default genesis."""
    if genesis is None:
        return succeeded(porto_ledger("init", data=data, hash_seed=hash_seed)).last
    document = data.parent / f"{data.name}-genesis.json"
    document.write_bytes(orjson.dumps(genesis))
    return succeeded(porto_ledger("init", "--genesis", document, data=data, hash_seed=hash_seed)).last


EXPORTER = "demo-auditor-1"  # the demo stream's auditor, who may export


def init_demo(data: Path, *, hash_seed: int | None = None) -> dict[str, Any]:
    """A ledger for the demo scenario: its genesis trusts the demo's fixture step-up key."""
    return init(data, hash_seed=hash_seed, genesis=demo_genesis())


def submit(data: Path, stream: Path, *, hash_seed: int | None = None) -> list[dict[str, Any]]:
    return succeeded(porto_ledger("submit", stream, data=data, hash_seed=hash_seed)).lines


def head(data: Path) -> dict[str, Any]:
    return succeeded(porto_ledger("head", data=data)).last


def export(data: Path, destination: Path, *, actor: str = EXPORTER) -> dict[str, Any]:
    """``porto-ledger export`` of a scratch copy of ``data``: an export journals its access in the ledger it
    exports, and tests share stopped ledgers they must not change."""
    scratch = Path(tempfile.mkdtemp(prefix="porto-export-"))
    try:
        shutil.copytree(data, scratch / "ledger")
        return succeeded(porto_ledger("export", destination, "--actor", actor, data=scratch / "ledger")).last
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def demo_lines(seed: int, *, listeners: int, days: int, hash_seed: int | None = None) -> list[bytes]:
    """The demo scenario's envelopes, one canonical JSON line each."""
    run = succeeded(porto_ledger("demo-envelopes", "--seed", seed, "--listeners", listeners, "--days", days,
                                 hash_seed=hash_seed))
    return run.output.splitlines(keepends=True)


def write_stream(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(lines))
    return path


def demo_ledger(root: Path, seed: int, *, listeners: int, days: int) -> Path:
    """A stopped ledger at ``root/ledger`` holding one demo scenario, submitted through the CLI."""
    data = root / "ledger"
    init(data)
    submit(data, write_stream(root / "demo.jsonl", demo_lines(seed, listeners=listeners, days=days)))
    return data
