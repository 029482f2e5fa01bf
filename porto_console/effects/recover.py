"""Recovery after host loss in one step: restore, reconcile with the console up, report; dispatch stays paused.

1. The ledger's half (``offsite.recover``, also ``porto-ledger recover``): the
   newest verified snapshot of the backup repository is restored into the
   empty data and admission directories, the ledger with dispatch disabled.
2. A console is started on the restored ledger on a loopback port of its own,
   and reconcile (``porto_console.effects.reconcile``, in the workers'
   environment) records what the chain and the signed-payment journal know
   that the backup did not. A transaction that could still land is waited for:
   reconcile runs again until none is left or ``wait_secs`` have passed.
3. The console is stopped and the report printed. Resuming dispatch stays a
   person's decision: ``porto-ledger --data DIR promote --reason ...`` (docs/adr/0091).

Run with both the console's settings and a payment worker's environment
(its credential, journal, chain and signer key): ``manage.py recover``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from django.conf import settings

from ledger_engine.checkpoint import offsite
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import Report
from porto_console.effects.backups import configured_repository

ROOT = Path(__file__).resolve().parents[2]
CONSOLE_START_SECS = 120
RECONCILE_AGAIN_SECS = 5.0


def recover(*, last_known_sequence: int | None, wait_secs: float, restored: bool = False) -> Report:
    """The whole recovery; ``restored`` skips step 1 when ``porto-ledger recover`` already ran."""
    data_dir, admission_dir = settings.LEDGER_DATA_DIR, settings.ADMISSION_DIR
    facts = None if restored else offsite.recover(data_dir, admission_dir, repository=_repository_to_recover_from(),
                                                  trusted_genesis=settings.GENESIS_HASH)
    at_restore = offsite.payments_by_state(data_dir)
    port = _free_port()
    console = _start_console(port)
    try:
        runs, reconciled = _reconcile_until_settled(f"http://127.0.0.1:{port}/internal", wait_secs)
    finally:
        _stop(console)
    report = {"restored": facts and offsite.recovery_report(facts, data_dir, last_known_sequence=last_known_sequence,
                                                             now_ms=time.time_ns() // 1_000_000),
              "payments_at_restore": at_restore, "reconcile_runs": runs, "reconcile": reconciled,
              "payments_after_reconcile": offsite.payments_by_state(data_dir), "dispatch": "paused",
              "safe_to_resume": reconciled["safe_to_resume"],
              "next": f"porto-ledger --data {data_dir} promote --reason '...'"
                      if reconciled["safe_to_resume"] else "reconcile found discrepancies: keep dispatch paused"}
    return report


def _repository_to_recover_from():
    """The configured repository, with its own password: recovery never falls back to the demo's public one."""
    if not settings.BACKUP_PASSWORD:
        raise LedgerError(ErrorCode.MALFORMED_ENVELOPE,
                          "recover needs the backup repository's password: set RESTIC_PASSWORD or RESTIC_PASSWORD_FILE")
    return configured_repository()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_console(port: int) -> subprocess.Popen:
    env = {**os.environ, "PORT": str(port), "HOST": "127.0.0.1"}
    log = open(Path(settings.LOG_DIR) / "recover-console.log", "ab")
    console = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "run_console.py")], cwd=ROOT, env=env,
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + CONSOLE_START_SECS
    while time.monotonic() < deadline:
        if console.poll() is not None:
            raise RuntimeError(f"the console exited {console.returncode}; see {log.name}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/internal/head", timeout=1).status_code == 401:
                return console
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    _stop(console)
    raise RuntimeError("the console did not start serving")


def _reconcile_until_settled(api_url: str, wait_secs: float) -> tuple[int, Report]:
    deadline, runs = time.monotonic() + wait_secs, 0
    while True:
        runs += 1
        report = _reconcile_once(api_url)
        if report["safe_to_resume"] or time.monotonic() >= deadline:
            return runs, report
        time.sleep(RECONCILE_AGAIN_SECS)


def _reconcile_once(api_url: str) -> Report:
    """One run of reconcile in the workers' environment: no Django settings, the recovering console's API."""
    env = {name: value for name, value in os.environ.items() if name not in ("DJANGO_SETTINGS_MODULE", "DATA_DIR")}
    done = subprocess.run([sys.executable, "-m", "porto_console.effects.reconcile"], cwd=ROOT,
                          env={**env, "PORTO_INTERNAL_API_URL": api_url}, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise RuntimeError(f"reconcile failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def _stop(console: subprocess.Popen) -> None:
    if console.poll() is None:
        os.killpg(console.pid, signal.SIGTERM)
        try:
            console.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(console.pid, signal.SIGKILL)
            console.wait()
