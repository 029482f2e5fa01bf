"""Celery tasks: thin shells that build this process's collaborators and hand the work on.

Retries are bounded, exponential and jittered. What still fails after them,
and anything ``Poison``, goes to the quarantine, where an operator sees it
and can send it back (``dispatch.retry_quarantined``). Waiting for the chain
is not failure: ``NotYet`` hands the transaction to a later ``follow`` (or
``follow_commitment``) task.
Every effect task first asks whether dispatch is enabled and does nothing
while it is not; the sweep sends the work again once it is.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

from celery import Task

from porto_console.effects import commitment_session, dispatch, payment_session
from porto_console.effects.aptos_rest import AptosRestClient
from porto_console.effects.celery_app import COMMITMENTS, PAYMENTS, app
from porto_console.effects.commitment_journal import SignedCommitmentJournal
from porto_console.effects.commitment_session import CommitmentWorker
from porto_console.effects.config import EffectsConfig
from porto_console.effects.effect_worker import EffectWorker, NotYet, Poison
from porto_console.effects.ledger_api import LedgerApi, LedgerRefused, LedgerUnreachable
from porto_console.effects.payment_journal import SignedPaymentJournal
from porto_console.effects.payment_session import PaymentWorker
from porto_console.effects.quarantine import Quarantine
from porto_console.effects.signer import Signer

log = logging.getLogger("porto.effects.tasks")

MAX_RETRIES = 8
FOLLOW_AGAIN_SECS = 5


@functools.cache
def config() -> EffectsConfig:
    return EffectsConfig.from_env()


@functools.cache
def ledger_api() -> LedgerApi:
    return LedgerApi.from_config(config())


@functools.cache
def chain() -> AptosRestClient:
    settings = config()
    return AptosRestClient(settings.chain_url, simulated=settings.simulated)


@functools.cache
def payment_worker() -> PaymentWorker:
    settings = config()
    return PaymentWorker(settings, ledger_api(), chain(), Signer.from_config(settings),
                         SignedPaymentJournal(settings.payment_journal))


@functools.cache
def commitment_worker() -> CommitmentWorker:
    settings = config()
    return CommitmentWorker(settings, ledger_api(), chain(), Signer.committer(settings),
                            SignedCommitmentJournal(settings.commitment_journal))


def quarantine() -> Quarantine:
    return Quarantine(config().quarantine_dir)


class EffectTask(Task):
    """Retries transient failures; quarantines poison and exhausted work."""

    autoretry_for = (Exception,)
    dont_autoretry_for = (Poison, NotYet, LedgerRefused)
    max_retries = MAX_RETRIES
    retry_backoff = 2
    retry_backoff_max = 300
    retry_jitter = True
    effect_kind = "payment.transfer"  # what a task given a transaction hash, not an effect, works on

    def on_failure(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: Any) -> None:
        subject = args[0] if args else {}
        effect_id = subject["effect_id"] if isinstance(subject, dict) else str(subject)
        kind = subject["kind"] if isinstance(subject, dict) else self.effect_kind
        entry = quarantine().add(effect_id, kind, f"{type(exc).__name__}: {exc}", self.request.retries)
        log.error("quarantined %s after %s retries: %s", effect_id, entry["retries"], entry["reason"])


def dispatch_disabled() -> bool:
    state = ledger_api().dispatch()
    if not state["enabled"]:
        log.info("dispatch is disabled (%s): starting nothing", state["reason"])
    return not state["enabled"]


@app.task(bind=True, base=EffectTask, name="porto.effects.payment", queue=PAYMENTS)
def payment(self: Task, effect: dict[str, Any]) -> str:
    return _carry_out(effect, lambda: payment_session.carry_out(payment_worker(), effect), follow)


@app.task(bind=True, base=EffectTask, name="porto.effects.follow", queue=PAYMENTS)
def follow(self: Task, transaction_hash: str, again: bool = True) -> str:
    """Settle one signed transaction; ``again`` queues another look when the chain has not settled it yet."""
    return _follow(transaction_hash, again, payment_worker, payment_session.follow, follow)


@app.task(bind=True, base=EffectTask, name="porto.effects.commitment", queue=COMMITMENTS)
def commitment(self: Task, effect: dict[str, Any]) -> str:
    return _carry_out(effect, lambda: commitment_session.carry_out(commitment_worker(), effect), follow_commitment)


@app.task(bind=True, base=EffectTask, name="porto.effects.follow_commitment", queue=COMMITMENTS,
          effect_kind="batch.anchor")
def follow_commitment(self: Task, transaction_hash: str, again: bool = True) -> str:
    """Settle one signed commitment; ``again`` queues another look when the chain has not settled it yet."""
    return _follow(transaction_hash, again, commitment_worker, commitment_session.follow, follow_commitment)


def _carry_out(effect: dict[str, Any], carry_out: Callable[[], str], follow_task: Task) -> str:
    """Work one effect; a transaction the chain has not settled yet is handed to ``follow_task``."""
    if dispatch_disabled():
        return "dispatch disabled"
    try:
        return carry_out()
    except NotYet as waiting:
        log.info("%s effect %s waits: %s", effect["kind"], effect["effect_id"], waiting)
        if waiting.transaction_hash:
            follow_task.apply_async(args=[waiting.transaction_hash], countdown=FOLLOW_AGAIN_SECS)
        return "waiting"


def _follow(transaction_hash: str, again: bool, worker: Callable[[], EffectWorker],
            follow_journalled: Callable[[Any, Any], str], follow_task: Task) -> str:
    """Settle one journalled transaction of this worker's kind, or look again later."""
    if dispatch_disabled():
        return "dispatch disabled"
    working = worker()
    record = working.journal.by_hash(transaction_hash)
    if record is None:
        raise Poison(f"{transaction_hash} is not in {working.journal.path}")
    try:
        return follow_journalled(working, record)
    except NotYet:
        if not again:
            return "left to the next sweep"
        follow_task.apply_async(args=[transaction_hash], countdown=FOLLOW_AGAIN_SECS)
        return "following"


@app.task(name="porto.effects.backup", autoretry_for=(LedgerUnreachable,), max_retries=3, retry_backoff=True)
def backup() -> dict[str, Any]:
    """Ask the ledger owner for a verified backup (``backups.take_backup`` runs in its process)."""
    return ledger_api().take_backup()


@app.task(name="porto.effects.sweep")
def sweep() -> int:
    """Dispatch every claimable effect; a lost announcement only delays an effect."""
    return dispatch.sweep(ledger_api(), quarantine())
