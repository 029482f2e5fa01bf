"""The payment pipeline in one process: the console's internal API served in the worker's own thread, the
SIMULATED chain, and payment workers that call the session, the payer's follower and its repair directly.

The ledger holds approved payout runs (``approval``) and is owned by this process, as the console owns it. A
worker here is what a Celery task would build, with its own actor and credential; what it would queue (a
payer's follower or repair, a parked effect) is kept in ``Asked`` instead, and ``Scheduler`` runs the repairs
it was asked for when they fall due, as a worker taking them from the ``payers`` queue would.
"""

from __future__ import annotations

import gc
import heapq
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from ledger_engine.application.owner import LedgerOwner
from porto_console.effects import payer_follow, payer_repair
from porto_console.effects.aptos_rest import AptosRestClient
from porto_console.effects.config import EffectsConfig
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.payment_journal import SignedPaymentJournal
from porto_console.effects.payment_session import PaymentWorker
from porto_console.effects.signer import Signer
from porto_console.internal_api.credentials import commands_for_role, issue
from porto_console.ledger import owner
from tests.effects.approval import approved_payments
from tests.effects.conftest import CHAIN_ID, PAYER_KEY, USDC
from tests.effects.stack import GENESIS, OBSERVER_ROLES, WORKER_ROLES, observer_of, provision_worker_actors

CLAIM_TTL_MS = 3_000


class LedgerDirectory:
    """A ledger directory while no console owns it, as ``approved_payments`` builds on it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir

    def ledger(self) -> LedgerOwner:
        return LedgerOwner.open(self.data_dir, genesis=GENESIS)

    def provision_worker(self, ledger: LedgerOwner, envelopes: Any, actor: str, roles: tuple[str, ...]) -> None:
        provision_worker_actors(ledger, envelopes, actor, roles)


@dataclass
class Asked:
    """What a worker asked for instead of queueing it: followers, repairs (with their delay), payments to send
    again and parked effects."""

    follows: list[str] = field(default_factory=list)
    repairs: list[tuple[str, float]] = field(default_factory=list)
    sends: list[list[dict[str, Any]]] = field(default_factory=list)
    parked: list[tuple[str, str]] = field(default_factory=list)


API_URL = "http://testserver/internal"


class CountingTransport(httpx.WSGITransport):
    """The console's WSGI application, called in this thread; counts the worker's round trips to it."""

    def __init__(self) -> None:
        from django.core.wsgi import get_wsgi_application

        super().__init__(app=get_wsgi_application())
        self.requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        with test_database_kept_open():
            response = super().handle_request(request)
            body = response.read()
            response.close()
        return httpx.Response(response.status_code, headers=response.headers, content=body, request=request)


@contextmanager
def test_database_kept_open() -> Iterator[None]:
    """A request served inside the test's transaction, as Django's test client serves one.

    The handler closes old connections when a request starts and finishes; inside the test's atomic block that
    would close the test's own PostgreSQL connection and fail every later query.
    """
    signals = (request_started, request_finished)
    for signal in signals:
        signal.disconnect(close_old_connections)
    try:
        yield
    finally:
        for signal in signals:
            signal.connect(close_old_connections)


def payment_worker(tmp_path: Path, chain_url: str, actor: str, *, journal: Path | None = None,
                   **settings: str) -> tuple[PaymentWorker, Asked, CountingTransport]:
    """A payment worker with its own credentials for ``actor`` and its observer, sharing the payer's journal."""
    token, observer_token = (_credential(name, roles) for name, roles in ((actor, WORKER_ROLES),
                                                                         (observer_of(actor), OBSERVER_ROLES)))
    config = EffectsConfig.from_env({
        "PORTO_CHAIN_URL": chain_url, "PORTO_CHAIN_ID": str(CHAIN_ID), "PORTO_USDC_METADATA": USDC,
        "PORTO_SIGNER_KEY": PAYER_KEY, "PORTO_WORKER_ID": actor, "PORTO_WORKER_TOKEN": token,
        "PORTO_OBSERVER_ID": observer_of(actor), "PORTO_OBSERVER_TOKEN": observer_token,
        "PORTO_INTERNAL_API_URL": API_URL, "PORTO_CLAIM_TTL_MS": str(CLAIM_TTL_MS),
        "PORTO_OBSERVE_WINDOW_SECS": "3", "PORTO_VAR_DIR": str(tmp_path / "var"), **settings})
    asked, transport = Asked(), CountingTransport()
    worker = PaymentWorker(
        config, LedgerApi(API_URL, token, transport=transport), AptosRestClient(chain_url, simulated=True),
        Signer.from_config(config), SignedPaymentJournal(journal or tmp_path / "effects" / "signed-payments.jsonl"),
        LedgerApi(API_URL, observer_token, transport=transport),
        ask_to_follow=asked.follows.append, ask_to_repair=lambda sender, delay: asked.repairs.append((sender, delay)),
        ask_to_send=lambda effects, delay: asked.sends.append(effects),
        park=lambda effect_id, error: asked.parked.append((effect_id, str(error))))
    return worker, asked, transport


def _credential(actor: str, roles: tuple[str, ...]) -> str:
    """A credential of a process of its own acting as ``actor``, for every command ``roles`` submit."""
    command_types = sorted({command for role in roles for command in commands_for_role(role)})
    return issue(f"{actor}-{uuid.uuid4().hex[:8]}", actor, command_types)[1]


def build_ledger(data_dir: Path, envelopes: Any, runs: int, actors: tuple[str, ...]) -> list[dict[str, Any]]:
    """Approved payout runs and the workers' actors on a new ledger; its payments."""
    payments = approved_payments(LedgerDirectory(data_dir), envelopes, runs=runs,
                                 workers=tuple((actor, WORKER_ROLES) for actor in actors))
    gc.collect()  # the closed owner's database handles go with its last reference, and with them the LOCK
    return payments


def open_effects(worker: PaymentWorker) -> list[dict[str, Any]]:
    return [effect for status in ("pending", "claimed") for effect in worker.api.effects(status)]


def payment_states(payment_ids: list[str]) -> dict[str, str]:
    from ledger_engine.layout import STATE

    return {payment_id: owner().get(STATE, f"payment/{payment_id}").data["state"] for payment_id in payment_ids}


class Scheduler:
    """The ``payers`` queue for one worker: the repairs it asked for, run when due, and its follower."""

    def __init__(self, worker: PaymentWorker, asked: Asked) -> None:
        self.worker, self.asked = worker, asked
        self._due: list[tuple[float, str]] = []

    def follow_until(self, settled: Callable[[], bool], timeout_secs: float) -> float:
        """Follow and repair the payer until ``settled``; the seconds it took."""
        started = time.monotonic()
        while not settled():
            assert time.monotonic() - started < timeout_secs, f"not settled within {timeout_secs}s: {self.asked}"
            self._take_repairs()
            self._run_due()
            try:
                payer_follow.follow_payer(self.worker, self.worker.signer.address, window_secs=0.5)
            except payer_follow.NotYet:
                pass
        return time.monotonic() - started

    def _take_repairs(self) -> None:
        for sender, delay in self.asked.repairs:
            heapq.heappush(self._due, (time.monotonic() + delay, sender))
        self.asked.repairs.clear()

    def _run_due(self) -> None:
        while self._due and self._due[0][0] <= time.monotonic():
            _, sender = heapq.heappop(self._due)
            payer_repair.repair_payer(self.worker, sender)
