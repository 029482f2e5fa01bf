"""The whole effects stack as real processes: console (ledger owner), Celery workers and beat, Redis, chain.

The ledger is prepared in the test process (approved payout runs through the
payout tests' world), then handed to a console server process, which owns
it from then on. Workers are ``celery worker`` processes with their own
bearer credential, talking to the console's internal API and to the
SIMULATED chain on loopback. Nothing here reaches into a process: tests
kill, restart and redeliver from the outside.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import redis
from aptos_sdk.ed25519 import PrivateKey

from ledger_engine.application.owner import LedgerOwner, check_for_owning, promote, read_reconciliation_owed
from ledger_engine.storage.value_codec import decode_record
from ledger_engine.errors import StorageFault
from ledger_engine.domain.commands.money.batches import batch_key
from ledger_engine.domain.commands.money.payments import payment_key
from ledger_engine.genesis import genesis_hash
from ledger_engine.layout import STATE
from ledger_engine.storage.rocks import RocksStore
from porto_console.effects.celery_app import QUEUE_FOR_KIND, make_app
from porto_console.effects.commitment_journal import SignedCommitmentJournal
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.payment_journal import SignedPaymentJournal
from porto_console.effects.signer import Signer
from tests.conftest import EnvelopeFactory
from tests.effects.conftest import CHAIN_ID, COMMITTER_KEY, PAYER_KEY, USDC
from tests.support import step_up

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
PAYMENTS_WORKER = "payments-worker-1"
LIVE_VIEW_ATTEMPTS = 5  # the owner compacts while the tests look: a file can vanish between listing and opening
WORKER_ROLES = ("dispatcher", "signer")  # a payment worker's own credential claims and signs
# Its second credential records what the chain did with them: no credential does both (docs/adr/0090).
OBSERVER_ROLES = ("dispatcher", "observer")
COMMITMENTS_WORKER = "commitments-worker-1"
COMMITTER_ROLES = ("committer", "observer")  # one credential anchors and observes its own commitments
TASK_FOR_KIND = {"payment.transfer": "porto.effects.payment", "batch.anchor": "porto.effects.commitment"}
CLAIM_TTL_MS = 3_000
WAIT_SECS = 90
# The stack's ledger names the workers' payer: an attempt sent from any other address is refused.
GENESIS = step_up.genesis(payer_address=Signer(PrivateKey.from_str(PAYER_KEY, strict=False)).address)
# The keys a deployed console must have (it refuses to serve without them); the step-up key is the one
# ``step_up.genesis()`` trusts, and the genesis the one the stack's ledger starts from (``GENESIS``).
DEPLOYMENT_KEYS = {"DJANGO_SECRET_KEY": "porto-effects-test-secret-key-not-the-default",
                   "PORTO_HANDLE_KEY": "porto-effects-test-handle-key-of-its-own",
                   "PORTO_STEP_UP_KEY": step_up.PRIVATE_KEY_HEX,
                   "PORTO_IDENTITY_KEY": "porto-effects-test-identity-key-of-its-own",
                   "PORTO_CHECKPOINT_KEY": "5e" * 32,
                   "RESTIC_PASSWORD": "porto-effects-test-backup-password",
                   "PORTO_GENESIS_HASH": genesis_hash(GENESIS)}


def observer_of(actor: str) -> str:
    """The actor a payment worker acting as ``actor`` records its chain observations as."""
    return f"{actor}-observer"


def provision_worker_actors(owner: LedgerOwner, envelopes: EnvelopeFactory, actor: str,
                            roles: tuple[str, ...]) -> None:
    """``actor`` with ``roles`` and, when it signs, the observer it records chain observations as."""
    assert owner.submit(envelopes.account(actor, "worker", list(roles))).accepted
    if "signer" in roles:
        assert owner.submit(envelopes.account(observer_of(actor), "worker", list(OBSERVER_ROLES))).accepted


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition: Callable[[], Any], what: str, timeout: float = WAIT_SECS) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")


class Stack:
    def __init__(self, tmp_path: Path, chain_url: str, broker_url: str) -> None:
        self.root = tmp_path
        self.data_dir = tmp_path / "ledger"
        self.var_dir = tmp_path / "var"
        self.var_dir.mkdir(parents=True, exist_ok=True)
        self.chain_url = chain_url
        self.port = free_port()
        self.console: subprocess.Popen | None = None
        self.workers: dict[str, subprocess.Popen] = {}
        self.beat: subprocess.Popen | None = None
        self.tokens: dict[str, str] = {}
        self.actors: dict[str, str] = {}
        self.observers: dict[str, str] = {}  # a signing credential's name -> the actor its observer acts as
        self.journal = SignedPaymentJournal(tmp_path / "effects" / "signed-payments.jsonl")
        self.commitments = SignedCommitmentJournal(tmp_path / "effects" / "signed-commitments.jsonl")
        self.broker_url = broker_url
        self.worker_settings: dict[str, str] = {}  # more of the workers' environment, for this stack's tests
        self.broker = make_app(broker_url)
        redis.Redis.from_url(broker_url).flushdb()

    # The ledger while no console owns it.
    def ledger(self) -> LedgerOwner:
        return LedgerOwner.open(self.data_dir, genesis=GENESIS)

    def provision_worker(self, owner: LedgerOwner, envelopes: EnvelopeFactory, actor: str = PAYMENTS_WORKER,
                         roles: tuple[str, ...] = WORKER_ROLES) -> None:
        provision_worker_actors(owner, envelopes, actor, roles)

    def payment(self, payment_id: str) -> dict[str, Any]:
        """A payment as the ledger records it now, read from a read-only view beside its owner."""
        return self._state(payment_key(payment_id))

    def payments(self, payment_ids: list[str]) -> list[dict[str, Any]]:
        """Several payments read through one read-only view."""
        with self.live_view() as store:
            return [decode_record(store.get(STATE, payment_key(payment_id).encode())).data
                    for payment_id in payment_ids]

    def batch(self, batch_id: str) -> dict[str, Any]:
        return self._state(batch_key(batch_id))

    def _state(self, record_key: str) -> dict[str, Any]:
        with self.live_view() as store:
            return decode_record(store.get(STATE, record_key.encode())).data

    @contextmanager
    def live_view(self) -> Iterator[RocksStore]:
        """A read-only view beside the running owner, opened again if a compaction deleted a file it was opening."""
        for attempt in range(LIVE_VIEW_ATTEMPTS):
            try:
                store = RocksStore(self.data_dir, read_only=True)
                break
            except StorageFault as fault:
                if fault.code != "STORAGE_INCOMPLETE" or attempt == LIVE_VIEW_ATTEMPTS - 1:
                    raise
                time.sleep(0.1)
        with store:
            yield store

    # Processes.
    def env(self, **extra: str) -> dict[str, str]:
        """The console's environment; workers get ``worker_env``, which names no Django settings or ledger."""
        # Without DATABASE_URL the console keeps Django's database in its own var directory, so
        # credentials issued for one stack never outlive it in a shared server database.
        inherited = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
        return {**inherited, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "porto_console.settings",
                "PORTO_VAR_DIR": str(self.var_dir), "DATA_DIR": str(self.data_dir),
                "CELERY_BROKER_URL": self.broker_url, **DEPLOYMENT_KEYS, **extra}

    def manage(self, *arguments: str) -> str:
        done = subprocess.run([PYTHON, str(ROOT / "manage.py"), *arguments], env=self.env(), cwd=ROOT,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def issue_credential(self, name: str, actor: str = PAYMENTS_WORKER, roles: tuple[str, ...] = WORKER_ROLES) -> str:
        """``name``'s credential; a signer's comes with its observer's (``{name}-observer``), as deployed."""
        self.manage("migrate", "--verbosity", "0")
        self.tokens[name], self.actors[name] = self._issue(name, actor, roles), actor
        if "signer" in roles:
            observer = f"{name}-observer"
            self.tokens[observer] = self._issue(observer, observer_of(actor), OBSERVER_ROLES)
            self.actors[observer] = self.observers[name] = observer_of(actor)
        return self.tokens[name]

    def _issue(self, name: str, actor: str, roles: tuple[str, ...]) -> str:
        options = [option for role in roles for option in ("--role", role)]
        return json.loads(self.manage("worker_credentials", "issue", name, "--actor", actor, *options))["token"]

    def start_console(self) -> None:
        log = open(self.root / "console.log", "ab")
        self.console = subprocess.Popen([PYTHON, str(ROOT / "scripts" / "run_console.py")], cwd=ROOT,
                                        env=self.env(PORT=str(self.port), HOST="127.0.0.1"),
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self._console_answers, "the console to serve the internal API")

    def _console_answers(self) -> bool:
        if self.console.poll() is not None:
            raise AssertionError(f"the console exited: {(self.root / 'console.log').read_text()[-2000:]}")
        try:
            return httpx.get(f"{self.api_url}/head", timeout=1).status_code == 401
        except httpx.HTTPError:
            return False

    def stop_console(self, *, kill: bool = False) -> None:
        self._stop(self.console, kill=kill)
        self.console = None

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/internal"

    def worker_env(self, name: str) -> dict[str, str]:
        base = {key: value for key, value in os.environ.items() if key not in ("DJANGO_SETTINGS_MODULE", "DATA_DIR")}
        if name in self.observers:
            base.update(PORTO_OBSERVER_ID=self.observers[name], PORTO_OBSERVER_TOKEN=self.tokens[f"{name}-observer"])
        return dict(
            base, PYTHONPATH=str(ROOT), PORTO_VAR_DIR=str(self.root / "worker-var"),
            CELERY_BROKER_URL=self.broker_url, PORTO_CELERY_VISIBILITY_SECS="5", PORTO_SWEEP_SECS="1",
            PORTO_CHAIN="simulated", PORTO_CHAIN_URL=self.chain_url, PORTO_CHAIN_ID=str(CHAIN_ID),
            PORTO_USDC_METADATA=USDC, PORTO_SIGNER_KEY=PAYER_KEY, PORTO_COMMITTER_KEY=COMMITTER_KEY,
            PORTO_PAYMENT_JOURNAL=str(self.journal.path), PORTO_COMMITMENT_JOURNAL=str(self.commitments.path),
            PORTO_QUARANTINE_DIR=str(self.root / "effects" / "quarantine"),
            PORTO_INTERNAL_API_URL=self.api_url, PORTO_WORKER_ID=self.actors[name], PORTO_WORKER_TOKEN=self.tokens[name],
            PORTO_CLAIM_TTL_MS=str(CLAIM_TTL_MS), PORTO_OBSERVE_WINDOW_SECS="3", PORTO_RETRY_BACKOFF_MAX_SECS="2",
            **self.worker_settings,
        )

    def start_worker(self, credential: str, *, process: str | None = None, queues: str = "payers,payments,maintenance",
                     concurrency: int = 1) -> None:
        """A ``celery worker`` process (named ``process``, default the credential's name) with that credential."""
        name = process or credential
        log = open(self.root / f"{name}.log", "ab")
        self.workers[name] = subprocess.Popen(
            [PYTHON, "-m", "celery", "-A", "porto_console.effects.celery_app", "worker", "-Q", queues,
             "-c", str(concurrency), "-n", f"{name}@%h", "--without-gossip", "--without-mingle",
             "--without-heartbeat", "--loglevel", "INFO"],
            cwd=ROOT, env=self.worker_env(credential), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def start_beat(self, credential: str) -> None:
        log = open(self.root / "beat.log", "ab")
        self.beat = subprocess.Popen(
            [PYTHON, "-m", "celery", "-A", "porto_console.effects.celery_app", "beat",
             "-s", str(self.root / "beat-schedule"), "--loglevel", "INFO"],
            cwd=ROOT, env=self.worker_env(credential), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def pool_children(self, name: str) -> list[int]:
        found = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.workers[name].pid)],
                               capture_output=True, text=True).stdout.split()
        return [int(pid) for pid in found]

    def kill_worker(self, name: str) -> None:
        self._stop(self.workers.pop(name), kill=True)

    def pause_worker(self, name: str, paused: bool) -> None:
        """Stop (SIGSTOP) or continue (SIGCONT) a worker process and its pool, as a debugger or a stall would."""
        os.killpg(self.workers[name].pid, signal.SIGSTOP if paused else signal.SIGCONT)

    def promote(self, reason: str) -> bool:
        """The operator's promotion once reconcile exited 0, on the stopped ledger (docs/runbook.md); returns whether
        the ledger still owed a reconciliation before it."""
        with RocksStore(self.data_dir, check=check_for_owning) as store:
            owed = read_reconciliation_owed(store) is not None
            promote(store, reason)
        del store
        gc.collect()  # the closed store's database handles go with its last reference, and with them the LOCK
        return owed

    def reconcile(self, name: str = "payments-1") -> dict[str, Any]:
        """The operator's reconcile step, run with the payment worker's environment."""
        done = subprocess.run([PYTHON, "-m", "porto_console.effects.reconcile"], cwd=ROOT, env=self.worker_env(name),
                              capture_output=True, text=True)
        assert done.returncode in (0, 1), done.stderr
        return json.loads(done.stdout)

    def open_effects(self, credential: str) -> list[dict[str, Any]]:
        """Every pending or claimed effect, as the internal API lists it to ``credential``."""
        api = LedgerApi(self.api_url, self.tokens[credential])
        try:
            return [effect for status in ("pending", "claimed") for effect in api.effects(status)]
        finally:
            api.close()

    def send_effect(self, effect: dict[str, Any]) -> None:
        """Publish one effect's message straight onto the broker, as a redelivery would (a payment alone in its
        batch)."""
        subject = [effect] if effect["kind"] == "payment.transfer" else effect
        self.broker.send_task(TASK_FOR_KIND[effect["kind"]], args=[subject], queue=QUEUE_FOR_KIND[effect["kind"]])

    def stop_all(self) -> None:
        for name in list(self.workers):
            self._stop(self.workers.pop(name), kill=False)
        self._stop(self.beat, kill=False)
        self.beat = None
        self.stop_console()

    @staticmethod
    def _stop(process: subprocess.Popen | None, *, kill: bool) -> None:
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
