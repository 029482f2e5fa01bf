"""Getting effects to workers: the announcement after commit, the periodic sweep, quarantine retries.

Neither path decides who works an effect: ``ClaimEffect`` does. Sending the
same effect twice costs one rejected claim, never a second effect. The sweep
also schedules an observation of every in-flight payment attempt, so the
follow-up of a submitted payment does not depend on a broker message either,
and a check of the signer's journal against the ledger
(``journal_reconcile``). Nothing is queued twice: an effect, a transaction
or the journal check with a message already waiting is skipped
(``queued``), so a backlog does not grow with sweeps. While dispatch is
disabled the sweep sends nothing.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any, Callable, Iterable

from porto_console.effects.celery_app import COMMITMENTS, PAYMENTS, QUEUE_FOR_KIND, app, queued_mark_secs
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.journal_port import QuarantinePort
from porto_console.effects.queued import Marks, marks_for

log = logging.getLogger("porto.effects.delivery")

CLAIMABLE = ("pending", "claimed")


@functools.cache
def queued_marks() -> Marks:
    return marks_for(app.conf.broker_write_url, queued_mark_secs())


def effect_subject(effect_id: str) -> str:
    return f"effect:{effect_id}"


def follow_subject(task_name: str, transaction_hash: str) -> str:
    return f"{task_name}:{transaction_hash}"


JOURNAL_SUBJECT = "journal"


def send(effect: dict[str, Any]) -> bool:
    """Queue one effect for the workers of its kind, unless a message for it is already waiting; True if sent.

    Payments go to ``payments``, batch anchors to ``commitments``.
    """
    from porto_console.effects.tasks import commitment, payment

    task = {"payment.transfer": payment, "batch.anchor": commitment}.get(effect["kind"])
    if task is None:
        log.info("no worker for %s effects: %s", effect["kind"], effect["effect_id"])
        return False
    if not queued_marks().mark(effect_subject(effect["effect_id"])):
        return False
    task.apply_async(args=[effect], queue=QUEUE_FOR_KIND[effect["kind"]])
    return True


def announce(effects: Iterable[dict[str, Any]]) -> None:
    """The owner's hook after an acknowledged command that created or reopened effects."""
    for effect in effects:
        send(effect)


def look_again(task: Any, transaction_hash: str, *, again: bool, countdown: float = 0,
               effect_id: str | None = None) -> bool:
    """Queue ``task`` (a follow task) for one transaction unless a look at it is already waiting; True if sent.

    ``effect_id`` names the effect the transaction carries out: a follow that fails for good parks it.
    """
    if not queued_marks().mark(follow_subject(task.name, transaction_hash)):
        return False
    queue = COMMITMENTS if task.name == "porto.effects.follow_commitment" else PAYMENTS
    task.apply_async(args=[transaction_hash], kwargs={"again": again, "effect_id": effect_id}, countdown=countdown,
                     queue=queue)
    return True


def observe(attempt: dict[str, Any]) -> bool:
    """Queue one look at an in-flight attempt on chain; the next sweep sends another if it is still in flight."""
    from porto_console.effects.tasks import follow

    return look_again(follow, attempt["transaction_hash"], again=False, effect_id=attempt["effect_id"])


def observe_batch(batch: dict[str, Any]) -> bool:
    """Queue one look at an in-flight anchor on chain; the next sweep sends another if it is still in flight."""
    from porto_console.effects.tasks import follow_commitment

    return look_again(follow_commitment, batch["transaction_hash"], again=False, effect_id=batch["anchor_effect_id"])


def check_journal(countdown: float = 0) -> bool:
    """Queue one check of the signer's journal against the ledger (``journal_reconcile``) unless one is waiting.

    ``countdown`` delays it: a check that found a stranded transaction under a live claim runs again when
    the claim lapses.
    """
    from porto_console.effects.tasks import reconcile_journal

    if not queued_marks().mark(JOURNAL_SUBJECT):
        return False
    reconcile_journal.apply_async(queue=PAYMENTS, countdown=countdown)
    return True


def sweep(api: LedgerApi, quarantine: QuarantinePort) -> int:
    """Send every claimable effect, a look at every in-flight attempt and anchor and a journal check; how many."""
    state = api.dispatch()
    if not state["enabled"]:
        log.info("dispatch is disabled (%s): the sweep sends nothing", state["reason"])
        return 0
    return _send_claimable(api, quarantine) + _observe_in_flight(api, quarantine) + check_journal()


def lapsed(effect: dict[str, Any], now_ms: int) -> bool:
    """Unclaimed, or its claim has lapsed: anyone may claim it."""
    return effect["claim"] is None or effect["claim"]["expires_at_ms"] <= now_ms


def _send_claimable(api: LedgerApi, quarantine: QuarantinePort) -> int:
    """Every pending effect and every effect whose claim has lapsed, except quarantined and already queued ones."""
    now_ms = time.time_ns() // 1_000_000
    sent = 0
    for status in CLAIMABLE:
        for effect in api.effects(status):
            if lapsed(effect, now_ms) and not quarantine.contains(effect["effect_id"]):
                sent += send(effect)
    return sent


def _observe_in_flight(api: LedgerApi, quarantine: QuarantinePort) -> int:
    return (_observe_each(api.in_flight_attempts(), "effect_id", observe, quarantine)
            + _observe_each(api.in_flight_batches(), "anchor_effect_id", observe_batch, quarantine))


def _observe_each(items: Iterable[dict[str, Any]], effect_field: str, look: Callable[[dict[str, Any]], None],
                  quarantine: QuarantinePort) -> int:
    """Queue ``look`` for every item whose effect is not quarantined; returns how many."""
    sent = 0
    for item in items:
        if not quarantine.contains(item[effect_field]):
            sent += look(item)
    return sent


def quarantined(quarantine: QuarantinePort) -> list[dict[str, Any]]:
    """What the console shows: every quarantined effect with its reason, oldest first."""
    return quarantine.entries()


def retry_quarantined(quarantine: QuarantinePort, effect_id: str) -> bool:
    """An operator's retry: release the effect; the next sweep sends it if it is still claimable."""
    if quarantine.release(effect_id) is None:
        return False
    log.info("operator released %s from quarantine", effect_id)
    return True


def retry_all_quarantined(quarantine: QuarantinePort, effect_ids: Iterable[str] | None = None) -> list[str]:
    """An operator's bulk retry: release the named effects (default: all); returns those that were released."""
    wanted = [entry["effect_id"] for entry in quarantine.entries()] if effect_ids is None else list(effect_ids)
    return [effect_id for effect_id in wanted if retry_quarantined(quarantine, effect_id)]
