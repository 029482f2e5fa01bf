"""The host-loss drill, end to end: payments in flight, backups over SFTP, everything killed, recover, resume.

The console backs up (ledger, evidence and envelopes, encrypted by restic) to
a repository behind a loopback ``sshd`` while a payment worker pays. The
simulated chain lets the first payments land and holds the rest; once a
backup holds those, the repository goes out of reach, two more land, and
every process is SIGKILLed and the ledger host's directories are deleted;
the signed-payment journal, the chain and the repository survive, as they
live elsewhere. ``manage.py recover`` restores the newest good backup from
the SFTP repository, reconciles and reports with dispatch paused; the
operator's one step is ``porto-ledger promote``. Every payment is
paid exactly once, no evidence is missing, and the RPO is printed.
"""

from __future__ import annotations

import gc
import json
import re
import shutil
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
from aptos_sdk.ed25519 import PrivateKey

from ledger_engine.storage.head import read_head
from ledger_engine.checkpoint.offsite import referenced_evidence_of_ledger
from ledger_engine.storage.rocks import RocksStore
from porto_console.effects.signer import Signer
from tests.effects.approval import approved_payments, porto_ledger
from tests.effects.chain_process import ChainProcess
from tests.effects.conftest import CAMPAIGNS, CHAIN_ID, PAYER_KEY, USDC
from tests.effects.redis_server import RedisServer
from tests.effects.stack import PAYMENTS_WORKER, ROOT, WORKER_ROLES, Stack, wait_until
from tests.effects.test_campaign import Processes, paid_on_chain, settled
from tests.support.fixture_commands import with_fixture_commands

pytestmark = [pytest.mark.slow]

RUNS = 4  # 20 payments
# The chain runs the first few transfers and holds the rest, so the drill meets the same moment every time:
# a backup holding confirmed payments, more confirmed after it, and the rest signed and in flight.
CONFIRMED_FIRST = 5
CONFIRMED_AFTER_BACKUP = 2
ROLES = (*WORKER_ROLES, "maintenance")  # the payment worker also runs beat's backup tick
TRANSACTION_TTL_SECS = 120
COUNTED = re.compile(r"backup counted: sequence (\d+), snapshot (\w+)")


class DrillStack(Stack):
    """The effects stack with its console backing up to an SFTP repository every few seconds."""

    def __init__(self, *arguments: Any, backup_env: dict[str, str]) -> None:
        super().__init__(*arguments)
        self.backup_env = backup_env

    def env(self, **extra: str) -> dict[str, str]:
        return super().env(**self.backup_env, **extra)

    def worker_env(self, name: str) -> dict[str, str]:
        return {**super().worker_env(name), "PORTO_BACKUP_TICK_SECS": "1"}

    def counted_backups(self) -> list[tuple[int, str]]:
        log = (self.root / "console.log").read_text(errors="replace")
        return [(int(sequence), snapshot) for sequence, snapshot in COUNTED.findall(log)]


@pytest.fixture
def drill(tmp_path, envelopes, ssh_server):
    broker = RedisServer(tmp_path / "redis").start()
    chain = ChainProcess(tmp_path / "chain", CHAIN_ID).start()
    repository = tmp_path / "off-host" / "repository"
    backup_env = {"PORTO_BACKUP_REPOSITORY": ssh_server.repository(repository),
                  "PORTO_BACKUP_SFTP_COMMAND": ssh_server.sftp_command,
                  "PORTO_BACKUP_INTERVAL_SECS": "2", "PORTO_BACKUP_TICK_SECS": "1"}
    stack = DrillStack(tmp_path, chain.url, broker.url(0), backup_env=backup_env)
    payments = approved_payments(stack, envelopes, runs=RUNS, workers=((PAYMENTS_WORKER, ROLES),))
    gc.collect()  # the closed owner's database handles go with its last reference, and with them the LOCK
    stack.issue_credential("payments-1", PAYMENTS_WORKER, ROLES)
    chain.control("fund", asset=USDC, address=Signer(PrivateKey.from_str(PAYER_KEY, strict=False)).address,
                  amount=str(10**15))
    processes = Processes(stack, broker, chain, {"payments-1": "payments-1"})
    processes.repository = repository
    # The fixture world's commands went straight to the ledger with made-up digests, never through the
    # gateway, so their evidence was never stored: the only evidence no backup can hold.
    processes.fixture_evidence = referenced_evidence_of_ledger(stack.data_dir)
    yield processes, payments
    processes.stop_all()


def test_host_loss_drill_over_sftp_pays_every_payment_exactly_once(drill):
    processes, payments = drill
    stack = processes.stack
    processes.chain.control("hold", after=CONFIRMED_FIRST)
    stack.start_console()
    wait_until(stack.counted_backups, "the backup taken at start", timeout=120)
    processes.start("payments-1")
    processes.start("beat")
    wait_until(lambda: confirmed(stack, payments) == CONFIRMED_FIRST, "the payments the chain lets through confirmed",
               timeout=300)
    holding = ledger_head(stack)
    wait_until(lambda: [sequence for sequence, _ in stack.counted_backups() if sequence >= holding],
               "a backup holding those payments while the chain holds the rest", timeout=300)
    with off_host_repository_gone(processes.repository):
        backed_up = max(sequence for sequence, _ in stack.counted_backups())
        processes.chain.control("release", count=CONFIRMED_AFTER_BACKUP)
        wait_until(lambda: confirmed(stack, payments) == CONFIRMED_FIRST + CONFIRMED_AFTER_BACKUP
                   and ledger_head(stack) > backed_up, "payments confirmed after the newest backup", timeout=300)
        lose_everything(processes)
    lost_at_ms = time.time_ns() // 1_000_000
    with RocksStore(stack.data_dir, read_only=True, stopped=True) as store:
        last_head = read_head(store).sequence
    in_flight = len(payments) - confirmed(stack, payments)
    for directory in (stack.data_dir, stack.root / "admission", stack.root / "backup-staging", stack.root / "backups"):
        shutil.rmtree(directory, ignore_errors=True)
    processes.chain.start()
    processes.broker.start()
    processes.chain.control("advance", seconds=TRANSACTION_TTL_SECS + 60)  # what the chain held expires
    processes.chain.control("release")  # and the hold ends

    report = manage_recover(stack, last_head)
    restored = report["restored"]
    assert report["safe_to_resume"] and report["dispatch"] == "paused", report
    assert restored["dispatch_enabled"] is False, report
    assert set(restored["evidence_missing"]) == processes.fixture_evidence, report  # all the gateway stored is back
    assert restored["evidence_restored"] == restored["evidence_referenced"] - len(processes.fixture_evidence) > 0
    assert restored["sequence"] <= last_head and restored["commands_lost"] == last_head - restored["sequence"]

    promoted = porto_ledger("--data", str(stack.data_dir), "promote", "--reason", "host-loss drill reconciled")
    assert promoted["reconciliation_owed_lifted"] is True
    stack.backup_env["PORTO_BACKUP_INTERVAL_SECS"] = "240"  # back to the default: one at start, then none here
    stack.start_console()
    processes.start("payments-1")
    processes.start("beat")
    try:
        wait_until(lambda: settled_while_the_chain_moves_on(processes, stack, payments),
                   "every payment confirmed after the recovery", timeout=600)
    except AssertionError:
        unsettled = [(p["payment_id"], p["state"], p["attempt_ids"]) for p in
                     stack.payments([p["payment_id"] for p in payments]) if p["state"] != "confirmed"]
        raise AssertionError(f"not confirmed after the recovery: {unsettled}; report {report}") from None
    processes.stop_all()

    outcome = paid_on_chain(processes, stack, payments)
    assert (outcome["exactly_once"], outcome["twice"], outcome["stuck"], outcome["unexplained"]) == (
        len(payments), 0, 0, 0), outcome
    present = {path.name for path in (stack.root / "admission" / "evidence").rglob("*") if path.is_file()}
    assert referenced_evidence_of_ledger(stack.data_dir) - present == processes.fixture_evidence
    seconds_lost = (lost_at_ms - restored["created_at_ms"]) / 1000
    CAMPAIGNS.append(
        f"host-loss drill: {len(payments)} payments ({in_flight} not yet confirmed at the loss), backup over SFTP at "
        f"sequence {restored['sequence']} (snapshot {restored['snapshot']}), RPO {restored['commands_lost']} "
        f"commands and {seconds_lost:.1f} s; {restored['evidence_restored']} evidence files restored, "
        f"0 missing (beside {len(processes.fixture_evidence)} fixture digests never stored); "
        f"reconcile {report['reconcile']['observed']} in {report['reconcile_runs']} run(s); "
        f"{outcome['exactly_once']} paid exactly once, 0 twice")
    print(CAMPAIGNS[-1])


def confirmed(stack, payments) -> int:
    return sum(p["state"] == "confirmed" for p in stack.payments([p["payment_id"] for p in payments]))


def ledger_head(stack) -> int:
    with stack.live_view() as store:
        return read_head(store).sequence


@contextmanager
def off_host_repository_gone(repository: Path) -> Iterator[None]:
    """The off-host repository is out of reach for a while: every backup taken meanwhile fails and none counts.

    A file takes its place, so that no backup can initialise a new repository there either.
    """
    away = repository.with_name(repository.name + ".away")
    repository.rename(away)
    repository.write_text("out of reach\n")
    try:
        yield
    finally:
        repository.unlink()
        away.rename(repository)


def settled_while_the_chain_moves_on(processes: Processes, stack, payments) -> bool:
    """Settled yet; if not, the simulated chain's clock runs on at twice the wall clock's pace.

    A transaction signed before the loss at a sequence that later ones took can never land: its payment
    is signed again only once the chain has passed its expiry. A real chain's clock moves on its own; this
    one moves only with the wall clock, so without this the drill would wait out every such expiry in real
    time, several in a row on a slow machine.
    """
    if settled(stack, payments):
        return True
    now = time.monotonic()
    if now - CHAIN_NUDGED[0] >= CHAIN_NUDGE_SECS:
        processes.chain.control("advance", seconds=CHAIN_NUDGE_SECS)
        CHAIN_NUDGED[0] = now
    return False


CHAIN_NUDGE_SECS = 5.0
CHAIN_NUDGED = [0.0]


def lose_everything(processes: Processes) -> None:
    """SIGKILL every process, the console (the ledger's owner) first, so the head read after it is the last one."""
    for name in ("console", "payments-1", "redis", "chain"):
        processes.kill(name)
    Stack._stop(processes.stack.beat, kill=True)
    processes.stack.beat = None


def manage_recover(stack: DrillStack, last_head: int) -> dict[str, Any]:
    worker = {name: value for name, value in stack.worker_env("payments-1").items() if name != "DATABASE_URL"}
    env = {**worker, **stack.env()}  # the console's settings and a payment worker's environment
    env = with_fixture_commands(env, ROOT)  # recovery replays the drill's history, made with test-only commands
    # The chain's clock was moved past the held transactions' expiry, but the ledger records an expiry only once its
    # own clock is past it too, up to a TTL after the last signature: recovery waits that long for reconcile to settle.
    wait_secs = TRANSACTION_TTL_SECS + 60
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "recover", "--last-sequence", str(last_head),
                           "--wait-secs", str(wait_secs)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
