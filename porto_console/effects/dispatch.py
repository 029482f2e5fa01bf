"""Getting effects to workers: the announcement after commit, the periodic sweep, quarantine retries.

Neither path decides who works an effect: ``ClaimEffect`` does. Sending the
same effect twice costs one rejected claim, never a second effect. The sweep
also schedules an observation of every in-flight payment attempt, so the
follow-up of a submitted payment does not depend on a broker message either.
While dispatch is disabled the sweep sends nothing.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Iterable

from porto_console.effects.celery_app import COMMITMENTS, PAYMENTS, QUEUE_FOR_KIND
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.quarantine import Quarantine

log = logging.getLogger("porto.effects.dispatch")

CLAIMABLE = ("pending", "claimed")


def send(effect: dict[str, Any]) -> None:
    """Queue one effect for the workers of its kind: payments to ``payments``, batch anchors to ``commitments``."""
    from porto_console.effects.tasks import commitment, payment

    task = {"payment.transfer": payment, "batch.anchor": commitment}.get(effect["kind"])
    if task is None:
        log.info("no worker for %s effects: %s", effect["kind"], effect["effect_id"])
        return
    task.apply_async(args=[effect], queue=QUEUE_FOR_KIND[effect["kind"]])


def announce(effects: Iterable[dict[str, Any]]) -> None:
    """The owner's hook after an acknowledged command that created or reopened effects."""
    for effect in effects:
        send(effect)


def observe(attempt: dict[str, Any]) -> None:
    """Queue one look at an in-flight attempt on chain; the next sweep sends another if it is still in flight."""
    from porto_console.effects.tasks import follow

    follow.apply_async(args=[attempt["transaction_hash"]], kwargs={"again": False}, queue=PAYMENTS)


def observe_batch(batch: dict[str, Any]) -> None:
    """Queue one look at an in-flight anchor on chain; the next sweep sends another if it is still in flight."""
    from porto_console.effects.tasks import follow_commitment

    follow_commitment.apply_async(args=[batch["transaction_hash"]], kwargs={"again": False}, queue=COMMITMENTS)


def sweep(api: LedgerApi, quarantine: Quarantine) -> int:
    """Send every claimable effect and an observation of every in-flight attempt and anchor; returns how many."""
    state = api.dispatch()
    if not state["enabled"]:
        log.info("dispatch is disabled (%s): the sweep sends nothing", state["reason"])
        return 0
    return _send_claimable(api, quarantine) + _observe_in_flight(api, quarantine)


def _send_claimable(api: LedgerApi, quarantine: Quarantine) -> int:
    """Every pending effect and every effect whose claim has lapsed, except quarantined ones."""
    now_ms = time.time_ns() // 1_000_000
    sent = 0
    for status in CLAIMABLE:
        for effect in api.effects(status):
            lapsed = effect["claim"] is None or effect["claim"]["expires_at_ms"] <= now_ms
            if lapsed and not quarantine.contains(effect["effect_id"]):
                send(effect)
                sent += 1
    return sent


def _observe_in_flight(api: LedgerApi, quarantine: Quarantine) -> int:
    return (_observe_each(api.in_flight_attempts(), "effect_id", observe, quarantine)
            + _observe_each(api.in_flight_batches(), "anchor_effect_id", observe_batch, quarantine))


def _observe_each(items: Iterable[dict[str, Any]], effect_field: str, look: Callable[[dict[str, Any]], None],
                  quarantine: Quarantine) -> int:
    """Queue ``look`` for every item whose effect is not quarantined; returns how many."""
    sent = 0
    for item in items:
        if not quarantine.contains(item[effect_field]):
            look(item)
            sent += 1
    return sent


def quarantined(quarantine: Quarantine) -> list[dict[str, Any]]:
    """What the console shows: every quarantined effect with its reason, oldest first."""
    return quarantine.entries()


def retry_quarantined(quarantine: Quarantine, effect_id: str) -> bool:
    """An operator's retry: release the effect; the next sweep sends it if it is still claimable."""
    if quarantine.release(effect_id) is None:
        return False
    log.info("operator released %s from quarantine", effect_id)
    return True
