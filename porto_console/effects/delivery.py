"""Getting effects to workers: the announcement after commit, the periodic sweep, quarantine retries.

Neither path decides who works an effect: ``ClaimEffect`` does. Sending the
same effect twice costs one rejected claim, never a second effect. Payment
effects travel in batches of up to ``PAYMENT_BATCH``, one message each, so a
worker claims, signs, records and reports them in a few round trips. The
sweep also asks, for every payer with an attempt in flight, for that payer's
follower (``payer_follow``), so the fate of a submitted payment does not
depend on a broker message either, and for a check of the signer's journal
against the ledger (``journal_reconcile``). Nothing is queued twice: an
effect, a payer's follower or repair, an anchor's follow-up or the journal
check with a message already waiting is skipped (``queued``), so a backlog
does not grow with sweeps; and one follower at a time watches a payer
(``following``). While dispatch is disabled the sweep sends nothing.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable, Iterable

from ledger_engine.open_json import RecordData, Report
from porto_console.effects.celery_app import COMMITMENTS, PAYERS, PAYMENTS, app, queued_mark_secs
from porto_console.effects.ledger_api import LedgerApi
from porto_console.effects.journal_port import QuarantinePort
from porto_console.effects.queued import Marks, marks_for

log = logging.getLogger("porto.effects.delivery")

CLAIMABLE = ("pending", "claimed")
PAYMENT = "payment.transfer"
PAYMENT_BATCH = 25  # payments in one message: one claim, one journal sync and one record round trip for them all


@functools.cache
def queued_marks() -> Marks:
    return marks_for(app.conf.broker_write_url, queued_mark_secs())


def effect_subject(effect_id: str) -> str:
    return f"effect:{effect_id}"


def follow_subject(task_name: str, transaction_hash: str) -> str:
    return f"{task_name}:{transaction_hash}"


def payer_subject(task_name: str, sender: str) -> str:
    return f"{task_name}:{sender}"


JOURNAL_SUBJECT = "journal"


def send(effect: RecordData) -> bool:
    """Queue one effect for the workers of its kind, unless a message for it is already waiting; True if sent.

    Payments go to ``payments``, batch anchors to ``commitments``.
    """
    from porto_console.effects.tasks import commitment

    if effect["kind"] == PAYMENT:
        return send_payments([effect]) == 1
    if effect["kind"] != "batch.anchor":
        log.info("no worker for %s effects: %s", effect["kind"], effect["effect_id"])
        return False
    if not queued_marks().mark(effect_subject(effect["effect_id"])):
        return False
    commitment.apply_async(args=[effect], queue=COMMITMENTS)
    return True


def send_payments(effects: Iterable[RecordData], countdown: float = 0) -> int:
    """Queue the payment effects no message waits for yet, ``PAYMENT_BATCH`` to a message; how many were queued."""
    from porto_console.effects.tasks import payment

    fresh = [effect for effect in effects if queued_marks().mark(effect_subject(effect["effect_id"]))]
    for start in range(0, len(fresh), PAYMENT_BATCH):
        payment.apply_async(args=[fresh[start:start + PAYMENT_BATCH]], queue=PAYMENTS, countdown=countdown)
    return len(fresh)


def announce(effects: Iterable[RecordData]) -> None:
    """The owner's hook after an acknowledged command that created or reopened effects."""
    effects = list(effects)
    send_payments([effect for effect in effects if effect["kind"] == PAYMENT])
    for effect in effects:
        if effect["kind"] != PAYMENT:
            send(effect)


def look_again(task: Any, transaction_hash: str, *, again: bool, countdown: float = 0,
               effect_id: str | None = None) -> bool:
    """Queue ``task`` (an anchor's follow task) for one transaction unless a look at it is already waiting.

    ``effect_id`` names the effect the transaction carries out: a follow that fails for good parks it.
    """
    if not queued_marks().mark(follow_subject(task.name, transaction_hash)):
        return False
    task.apply_async(args=[transaction_hash], kwargs={"again": again, "effect_id": effect_id}, countdown=countdown,
                     queue=COMMITMENTS)
    return True


def follow_payer(sender: str, countdown: float = 0) -> bool:
    """Queue the payer's follower (``payer_follow``) unless one is already waiting; True if sent."""
    from porto_console.effects.tasks import follow_payer as task

    return _for_payer(task, sender, countdown)


def repair_payer(sender: str, countdown: float = 0) -> bool:
    """Queue the payer's repair (``payer_repair``), after ``countdown`` seconds, unless one is already waiting."""
    from porto_console.effects.tasks import repair_payer as task

    return _for_payer(task, sender, countdown)


def _for_payer(task: Any, sender: str, countdown: float) -> bool:
    if not queued_marks().mark(payer_subject(task.name, sender)):
        return False
    task.apply_async(args=[sender], countdown=countdown, queue=PAYERS)
    return True


def following(sender: str, lease_secs: float) -> bool:
    """Take the lease that lets one follower at a time watch the payer; False when another holds it.

    A follower turned away leaves the holder a note first: the holder may have read the payer's attempts before
    this follower was asked for, so it sends a follower again when it stops (``stop_following``).
    """
    marks, lease = queued_marks(), f"following:{sender}"
    if marks.hold(lease, lease_secs):
        return True
    marks.mark(_follow_again(sender))
    if not marks.hold(lease, lease_secs):  # still held after the note was left: the holder will read it
        return False
    marks.take(_follow_again(sender))  # the holder let go first: this follower follows
    return True


def stop_following(sender: str) -> None:
    """Let go of the payer's lease, and send a follower again if one was turned away meanwhile."""
    marks = queued_marks()
    marks.let_go(f"following:{sender}")
    if marks.take(_follow_again(sender)):
        follow_payer(sender)


def _follow_again(sender: str) -> str:
    return f"follow-again:{sender}"


def observe_batch(batch: RecordData) -> bool:
    """Queue one look at an in-flight anchor on chain; the next sweep sends another if it is still in flight."""
    from porto_console.effects.tasks import follow_commitment

    return look_again(follow_commitment, batch["transaction_hash"], again=False, effect_id=batch["anchor_effect_id"])


def check_journal(countdown: float = 0) -> bool:
    """Queue one check of the signer's journal against the ledger (``journal_reconcile``) unless one is waiting."""
    from porto_console.effects.tasks import reconcile_journal

    if not queued_marks().mark(JOURNAL_SUBJECT):
        return False
    reconcile_journal.apply_async(queue=PAYMENTS, countdown=countdown)
    return True


def sweep(api: LedgerApi, quarantine: QuarantinePort) -> int:
    """Send every claimable effect, a follower for every payer and a look at every anchor in flight, and a journal
    check; how many messages."""
    state = api.dispatch()
    if not state["enabled"]:
        log.info("dispatch is disabled (%s): the sweep sends nothing", state["reason"])
        return 0
    return _send_claimable(api, quarantine) + _observe_in_flight(api, quarantine) + check_journal()


def lapsed(effect: RecordData, now_ms: int) -> bool:
    """Unclaimed, or its claim has lapsed: anyone may claim it."""
    return effect["claim"] is None or effect["claim"]["expires_at_ms"] <= now_ms


def _send_claimable(api: LedgerApi, quarantine: QuarantinePort) -> int:
    """Every pending effect and every effect whose claim has lapsed (on the ledger's clock), except quarantined and
    already queued ones."""
    now_ms = api.ledger_now_ms()
    claimable = [effect for status in CLAIMABLE for effect in api.effects(status)
                 if lapsed(effect, now_ms) and not quarantine.contains(effect["effect_id"])]
    payments = [effect for effect in claimable if effect["kind"] == PAYMENT]
    return send_payments(payments) + sum(send(effect) for effect in claimable if effect["kind"] != PAYMENT)


def _observe_in_flight(api: LedgerApi, quarantine: QuarantinePort) -> int:
    payers = dict.fromkeys(attempt["sender_address"] for attempt in api.in_flight_attempts()
                           if not quarantine.contains(attempt["effect_id"]))
    return (sum(follow_payer(sender) for sender in payers)
            + _observe_each(api.in_flight_batches(), "anchor_effect_id", observe_batch, quarantine))


def _observe_each(items: Iterable[RecordData], effect_field: str, look: Callable[[RecordData], bool],
                  quarantine: QuarantinePort) -> int:
    """Queue ``look`` for every item whose effect is not quarantined; returns how many."""
    sent = 0
    for item in items:
        if not quarantine.contains(item[effect_field]):
            sent += look(item)
    return sent


def quarantined(quarantine: QuarantinePort) -> list[Report]:
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
    wanted = [entry["effect_id"] for entry in quarantine.entries() if entry["effect_id"] is not None] \
        if effect_ids is None else list(effect_ids)
    return [effect_id for effect_id in wanted if retry_quarantined(quarantine, effect_id)]
