"""Celery tasks: thin shells that build this process's collaborators and hand the work on.

Failures are classified. A transient one (the console, the chain or the
broker unreachable, a lease not lapsed yet, a sequence the ledger has not
released yet, a payer's window full: ``TRANSIENT``) is retried with
exponential, jittered backoff capped at ``PORTO_RETRY_BACKOFF_MAX_SECS``, for
as long as it takes; the retry may then succeed or fail permanently. A
permanent one (a rule the ledger or the chain refused, a request the internal
API refused, a malformed record, any other error) goes to the quarantine with
its cause, where an operator sees it and can send it back, one by one or all
at once (``delivery.retry_quarantined``, ``retry_all_quarantined``); within a
batch of payments, the one payment it concerns is parked and the others go
on. Waiting for the chain is not failure: ``NotYet`` hands the payer (or the
commitment) to a later follower.

The payer's follower and repair run on the ``payers`` queue, which workers
take from before ``payments``. One follower at a time watches a payer
(``delivery.following``); a second one finds the payer watched and returns,
leaving a note that has the watching one send a follower again when it stops.
Every task but a batch of payments first asks whether dispatch is enabled
and does nothing while it is not; a batch's claims are refused while it is
not (``DISPATCH_DISABLED``), which starts nothing either, so it needs no
round trip of its own. A task clears its queued marks (``queued``) when it
starts and sets them again when it retries, so the sweep never queues a
second message for the same work.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable

import httpx
import psycopg
from celery import Task
from celery.signals import celeryd_after_setup, worker_ready

from ledger_engine.open_json import RecordData, Report
from porto_console.effects import (
    commitment_session, delivery, journal_reconcile, payer_follow, payer_repair, payment_session, stores,
)
from porto_console.effects.aptos_rest import AptosRestClient
from porto_console.effects.celery_app import COMMITMENTS, PAYERS, PAYMENTS, app
from porto_console.effects.chain import ChainUncertain
from porto_console.effects.commitment_session import CommitmentWorker
from porto_console.effects.config import EffectsConfig, NotConfigured
from porto_console.effects.effect_worker import EffectWorker, NotYet, Poison, Transient
from porto_console.effects.journal_port import JournalConflict, JournalCorrupt, QuarantinePort
from porto_console.effects.ledger_api import LedgerApi, LedgerRefused, LedgerUnreachable
from porto_console.effects.payment_session import PaymentWorker
from porto_console.effects.signer import Signer
from porto_console.environment import read_environment

log = logging.getLogger("porto.effects.tasks")

FOLLOW_AGAIN_SECS = 5
FOLLOWING_MARGIN_SECS = 10  # a follower's hold outlasts its window by this much, and lapses if it dies
# psycopg.OperationalError: the signer database is unreachable or restarting; the journal reconnects.
TRANSIENT = (Transient, LedgerUnreachable, ChainUncertain, httpx.TransportError, ConnectionError, TimeoutError,
             psycopg.OperationalError)


def retry_backoff_max_secs() -> int:
    return read_environment().retry_backoff_max_secs


@functools.cache
def config() -> EffectsConfig:
    return EffectsConfig.from_env()


@functools.cache
def ledger_api() -> LedgerApi:
    return LedgerApi.from_config(config())


@functools.cache
def observer_api() -> LedgerApi:
    """The payment worker's second credential: chain observations of its payments go through it alone."""
    return LedgerApi.observer_from_config(config())


@functools.cache
def chain() -> AptosRestClient:
    settings = config()
    return AptosRestClient(settings.chain_url, simulated=settings.simulated)


@functools.cache
def payment_worker() -> PaymentWorker:
    settings = config()
    return PaymentWorker(settings, ledger_api(), chain(), Signer.from_config(settings),
                         stores.payment_journal(settings), observer_api(), ask_for_journal_check=delivery.check_journal,
                         ask_to_follow=delivery.follow_payer,
                         ask_to_repair=lambda sender, delay_secs: delivery.repair_payer(sender, delay_secs),
                         ask_to_send=lambda effects, delay_secs: delivery.send_payments(effects, delay_secs),
                         park=park)


@functools.cache
def commitment_worker() -> CommitmentWorker:
    settings = config()
    return CommitmentWorker(settings, ledger_api(), chain(), Signer.committer(settings),
                            stores.commitment_journal(settings))


@functools.cache
def quarantine() -> QuarantinePort:
    return stores.quarantine(config().quarantine_dir, config().signer_journal_url)


class EffectTask(Task):
    """Retries transient failures with backoff for as long as they last; quarantines permanent ones with their cause."""

    autoretry_for = TRANSIENT
    max_retries = None
    retry_backoff = 1
    retry_backoff_max = retry_backoff_max_secs()
    retry_jitter = True
    effect_kind = "payment.transfer"  # what a task given a transaction hash, not an effect, works on
    for_payer = False  # its subject is a payer's address (its follower or repair)

    def queued_subjects(self, args: tuple) -> list[str]:
        """The queued marks of this task's message (``queued``): one per effect it carries, else its subject's."""
        subject = args[0] if args else None
        if isinstance(subject, list):
            return [delivery.effect_subject(effect["effect_id"]) for effect in subject]
        if isinstance(subject, dict):
            return [delivery.effect_subject(subject["effect_id"])]
        if self.for_payer:
            return [delivery.payer_subject(self.name, str(subject))]
        return [delivery.follow_subject(self.name, str(subject)) if subject else delivery.JOURNAL_SUBJECT]

    def before_start(self, task_id: str, args: tuple, kwargs: dict) -> None:
        for subject in self.queued_subjects(args):
            delivery.queued_marks().clear(subject)

    def on_retry(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: Any) -> None:
        for subject in self.queued_subjects(args):
            delivery.queued_marks().mark(subject)
        log.info("%s retries after a transient failure: %s: %s", self.name, type(exc).__name__, exc)

    def on_failure(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: Any) -> None:
        subject = args[0] if args else {}
        effects = subject if isinstance(subject, list) else [subject] if isinstance(subject, dict) else []
        named = getattr(exc, "effect_id", None)
        if not effects and named is None:
            log.error("%s failed permanently with no effect to park: %s", self.name, exc)
            return
        for effect in effects or [{"effect_id": named, "kind": self.effect_kind}]:
            park(effect["effect_id"], exc, kind=effect["kind"], retries=self.request.retries)


def park(effect_id: str, error: BaseException, *, kind: str = "payment.transfer", retries: int = 0) -> None:
    """Quarantine one effect for an operator, with the failure's cause."""
    entry = quarantine().add(effect_id, kind, f"{type(error).__name__}: {error}", retries, cause=permanent_cause(error))
    log.error("quarantined %s (%s): %s", effect_id, entry["cause"], entry["reason"])


def permanent_cause(error: BaseException) -> str:
    """Why a failure needs a person, in the words the quarantine screen shows."""
    if isinstance(error, Poison):
        return "refused rule: the ledger or the chain contradicts the effect's records"
    if isinstance(error, LedgerRefused):
        return f"refused request: the internal API answered {error.code}"
    if isinstance(error, JournalCorrupt):
        return "malformed record: the signed-payment journal does not verify"
    if isinstance(error, JournalConflict):
        return f"malformed record: the signed-payment journal refused it ({error.code})"
    return f"malformed record or program error: {type(error).__name__}"


def dispatch_disabled() -> bool:
    state = ledger_api().dispatch()
    if not state["enabled"]:
        log.info("dispatch is disabled (%s): starting nothing", state["reason"])
    return not state["enabled"]


@app.task(bind=True, base=EffectTask, name="porto.effects.payment", queue=PAYMENTS)
def payment(self: Task, effects: list[RecordData]) -> str:
    """Carry out a batch of payments (``payment_session``): claimed, signed, recorded, broadcast, reported."""
    return payment_session.carry_out(payment_worker(), effects)


@app.task(bind=True, base=EffectTask, name="porto.effects.follow_payer", queue=PAYERS, for_payer=True)
def follow_payer(self: Task, sender: str) -> str:
    """Watch the payer's sequence (``payer_follow``) while this worker holds its follower's lease."""
    if dispatch_disabled():
        return "dispatch disabled"
    window = config().observe_window_secs
    if not delivery.following(sender, window + FOLLOWING_MARGIN_SECS):
        return "another follower watches this payer"
    waiting = None
    try:
        return payer_follow.follow_payer(payment_worker(), sender, window_secs=window)
    except NotYet as still:
        log.info("payer %s: %s", sender, still)
        waiting = still
        return "following"
    finally:
        # Let go first: a follower asked for meanwhile is sent at once (attempts were recorded since this one's
        # look), and only otherwise does the payer wait for the next look.
        delivery.stop_following(sender)
        if waiting is not None:
            delivery.follow_payer(sender, countdown=FOLLOW_AGAIN_SECS)


@app.task(bind=True, base=EffectTask, name="porto.effects.repair_payer", queue=PAYERS, for_payer=True)
def repair_payer(self: Task, sender: str) -> str:
    """Fill the payer's sequence from the chain's next one up (``payer_repair``)."""
    if dispatch_disabled():
        return "dispatch disabled"
    return payer_repair.repair_payer(payment_worker(), sender).summary()


@app.task(bind=True, base=EffectTask, name="porto.effects.commitment", queue=COMMITMENTS)
def commitment(self: Task, effect: RecordData) -> str:
    return _carry_out(effect, lambda: commitment_session.carry_out(commitment_worker(), effect), follow_commitment)


@app.task(bind=True, base=EffectTask, name="porto.effects.follow_commitment", queue=COMMITMENTS,
          effect_kind="batch.anchor")
def follow_commitment(self: Task, transaction_hash: str, again: bool = True, effect_id: str | None = None) -> str:
    """Settle one signed commitment; ``again`` queues another look when the chain has not settled it yet."""
    return _follow(transaction_hash, again, effect_id, commitment_worker, commitment_session.follow,
                   follow_commitment)


def _carry_out(effect: RecordData, carry_out: Callable[[], str], follow_task: Task) -> str:
    """Work one effect; a transaction the chain has not settled yet is handed to ``follow_task``."""
    if dispatch_disabled():
        return "dispatch disabled"
    try:
        return carry_out()
    except NotYet as waiting:
        log.info("%s effect %s waits: %s", effect["kind"], effect["effect_id"], waiting)
        if waiting.transaction_hash:
            delivery.look_again(follow_task, waiting.transaction_hash, again=True, countdown=FOLLOW_AGAIN_SECS,
                                effect_id=effect["effect_id"])
        return "waiting"


def _follow(transaction_hash: str, again: bool, effect_id: str | None, worker: Callable[[], EffectWorker],
            follow_journalled: Callable[..., str], follow_task: Task) -> str:
    """Settle one journalled transaction of this worker's kind, or look again later.

    A transaction this signer's journal does not hold cannot be followed (its terms are unknown here): its
    effect is parked for an operator, so it shows in the quarantine and the sweep stops sending it.
    """
    if dispatch_disabled():
        return "dispatch disabled"
    working = worker()
    record = working.journal.by_hash(transaction_hash)
    if record is None:
        raise Poison(f"{transaction_hash} of effect {effect_id} is not in {working.journal.location}: this signer "
                     "cannot follow it", effect_id)
    try:
        # A sweep's look (``again`` false) looks once; a session's own follow-up waits out the window.
        return follow_journalled(working, record, window_secs=None if again else 0)
    except NotYet:
        if not again:
            return "left to the next sweep"
        delivery.look_again(follow_task, transaction_hash, again=True, countdown=FOLLOW_AGAIN_SECS,
                            effect_id=record.effect_id)
        return "following"


@app.task(name="porto.effects.backup", autoretry_for=(LedgerUnreachable,), max_retries=3, retry_backoff=True)
def backup() -> Report:
    """Beat's backup tick: the owner takes one if the newest good backup is older than the interval."""
    return ledger_api().take_backup()


@app.task(name="porto.effects.sweep")
def sweep() -> int:
    """Dispatch every claimable effect; a lost announcement only delays an effect."""
    return delivery.sweep(ledger_api(), quarantine())


@app.task(bind=True, base=EffectTask, name="porto.effects.reconcile_journal", queue=PAYMENTS)
def reconcile_journal(self: Task) -> Report:
    """The signer's own journal against the ledger and the chain (``journal_reconcile``); its report."""
    if dispatch_disabled():
        return {"dispatch": "disabled"}
    report = journal_reconcile.reconcile_journal(payment_worker(), quarantine())
    log.info("signed-payment journal reconciled: %s", report.as_json())
    return report.as_json()


@celeryd_after_setup.connect
def _refuse_to_start_unconfigured(sender: Any = None, instance: Any = None, **_: Any) -> None:
    """A worker taking payments without the observer's credential would quarantine every payment it observes:
    it does not start. (A signal handler's exception is only logged, so this one exits.)"""
    taken = set(instance.app.amqp.queues.consume_from or instance.app.amqp.queues) if instance is not None else set()
    if not taken & {PAYERS, PAYMENTS}:
        return
    try:
        config().require_observer()
    except NotConfigured as error:
        log.critical("payment worker %s refuses to start: %s", sender, error)
        raise SystemExit(f"porto payment worker not configured: {error}") from None


@worker_ready.connect
def _repair_at_start(sender: Any = None, **_: Any) -> None:
    """A signer repairs its payer's sequence and checks its journal as soon as it starts, before the next sweep."""
    settings = config()
    if settings.signer_key and settings.worker_token:
        delivery.repair_payer(Signer.from_config(settings).address)
        delivery.check_journal()
