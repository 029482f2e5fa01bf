"""Delivery and quarantine: what the sweep sends, what it skips, what an operator sees and retries."""

from __future__ import annotations

import pytest

from porto_console.effects import delivery
from porto_console.effects.quarantine import Quarantine
from porto_console.effects.queued import NoMarks

NOW_MS = 1_800_000_000_000


class ListedEffects:
    """The internal API's dispatch switch, effect listing and in-flight attempts, as the sweep reads them."""

    def __init__(self, effects, attempts=(), *, enabled=True, batches=()):
        self.listed = effects
        self.attempts = list(attempts)
        self.batches = list(batches)
        self.enabled = enabled

    def dispatch(self):
        return {"enabled": self.enabled, "reason": "initialised" if self.enabled else "restored"}

    def effects(self, status, kind=None):
        return [effect for effect in self.listed if effect["status"] == status]

    def in_flight_attempts(self):
        return self.attempts

    def in_flight_batches(self):
        return self.batches

    def ledger_now_ms(self):
        return NOW_MS


def effect(effect_id, status="pending", claim_expires_ms=None):
    claim = None if claim_expires_ms is None else {"worker_id": "w", "claimed_at_ms": 0,
                                                   "expires_at_ms": claim_expires_ms}
    return {"effect_id": effect_id, "kind": "payment.transfer", "status": status, "revision": 1, "claim": claim,
            "payload": {}}


PAYER, OTHER_PAYER = "0x" + "aa" * 32, "0x" + "bb" * 32


def attempt(effect_id, outcome="submitted", sender=PAYER):
    return {"attempt_id": f"tx-{effect_id}", "effect_id": effect_id, "outcome": outcome,
            "transaction_hash": "0x" + "ab" * 32, "sender_address": sender}


@pytest.fixture
def sent(monkeypatch):
    sent = []
    monkeypatch.setattr(delivery, "send", lambda effect: sent.append(effect) or True)
    monkeypatch.setattr(delivery, "send_payments", lambda effects: sent.extend(effects) or len(effects))
    monkeypatch.setattr(delivery, "check_journal", lambda: False)
    return sent


def batch(effect_id, state="submitted"):
    return {"batch_id": f"batch-{effect_id}", "anchor_effect_id": effect_id, "state": state,
            "transaction_hash": "0x" + "cd" * 32}


@pytest.fixture
def observed(monkeypatch):
    observed = []
    monkeypatch.setattr(delivery, "follow_payer", lambda sender: observed.append(sender) or True)
    monkeypatch.setattr(delivery, "observe_batch", lambda batch: observed.append(batch) or True)
    return observed


def test_sweep_sends_pending_and_lapsed_effects_but_not_live_claims_or_quarantined(sent, observed, tmp_path):
    quarantine = Quarantine(tmp_path / "q")
    quarantine.add("poisoned", "payment.transfer", "ValueError: bad", 8)
    listed = ListedEffects([effect("fresh"), effect("poisoned"), effect("lapsed", "claimed", NOW_MS - 1),
                            effect("held", "claimed", NOW_MS + 60_000)])
    assert delivery.sweep(listed, quarantine) == 2
    assert [e["effect_id"] for e in sent] == ["fresh", "lapsed"]


def test_sweep_asks_once_for_the_follower_of_every_payer_with_an_attempt_in_flight(sent, observed, tmp_path):
    quarantine = Quarantine(tmp_path / "q")
    quarantine.add("poisoned", "payment.transfer", "Poison: observation rejected", 8)
    listed = ListedEffects([], [attempt("paid-late"), attempt("poisoned", sender="0x" + "cc" * 32),
                                attempt("signed", "pending"), attempt("rotated", sender=OTHER_PAYER)])
    assert delivery.sweep(listed, quarantine) == 2
    assert sent == [] and observed == [PAYER, OTHER_PAYER]


def test_sweep_looks_at_every_in_flight_anchor_except_quarantined_ones(sent, observed, tmp_path):
    quarantine = Quarantine(tmp_path / "q")
    quarantine.add("poisoned", "batch.anchor", "Poison: observation rejected", 8)
    listed = ListedEffects([], batches=[batch("anchor-lost"), batch("poisoned"), batch("anchor-unknown", "uncertain")])
    assert delivery.sweep(listed, quarantine) == 2
    assert sent == [] and [b["anchor_effect_id"] for b in observed] == ["anchor-lost", "anchor-unknown"]


def test_a_look_at_an_in_flight_anchor_names_the_effect_it_carries_out(monkeypatch):
    looks = []
    monkeypatch.setattr(delivery, "look_again", lambda task, transaction_hash, **options: looks.append(
        (task.name, transaction_hash, options["effect_id"])) or True)
    delivery.observe_batch({"transaction_hash": "0x02", "anchor_effect_id": "batch-1.anchor"})
    assert looks == [("porto.effects.follow_commitment", "0x02", "batch-1.anchor")]


def test_sweep_sends_nothing_while_dispatch_is_disabled(sent, observed, tmp_path):
    listed = ListedEffects([effect("fresh")], [attempt("paid-late")], enabled=False, batches=[batch("anchor")])
    assert delivery.sweep(listed, Quarantine(tmp_path / "q")) == 0
    assert sent == observed == []


def test_operator_sees_and_retries_a_quarantined_effect(sent, observed, tmp_path):
    quarantine = Quarantine(tmp_path / "q")
    entry = quarantine.add("poisoned", "payment.transfer", "Poison: observation rejected", 3)
    assert delivery.quarantined(quarantine) == [entry]
    assert delivery.retry_quarantined(quarantine, "poisoned") is True
    assert delivery.retry_quarantined(quarantine, "poisoned") is False
    assert delivery.sweep(ListedEffects([effect("poisoned")]), quarantine) == 1


def test_bulk_retry_releases_every_named_effect_or_all(tmp_path):
    quarantine = Quarantine(tmp_path / "q")
    for name in ("one", "two", "three"):
        quarantine.add(name, "payment.transfer", "Poison: refused", 0, cause="refused rule")
    assert delivery.retry_all_quarantined(quarantine, ["two", "missing"]) == ["two"]
    assert sorted(delivery.retry_all_quarantined(quarantine)) == ["one", "three"]
    assert delivery.quarantined(quarantine) == []


class Published:
    """Stands in for a task's ``apply_async``: records what would have gone onto the broker."""

    def __init__(self, name, log):
        self.name, self.log = name, log
        self.countdowns = []

    def apply_async(self, args=(), kwargs=None, queue=None, countdown=0):
        self.log.append((self.name, tuple(args), queue))
        self.countdowns.append(countdown)


@pytest.fixture
def published(monkeypatch, broker_url):
    """The real marks on this session's redis-server; publishing recorded instead of sent."""
    import redis

    from porto_console.effects import tasks
    from porto_console.effects.queued import RedisMarks

    redis.Redis.from_url(broker_url).flushdb()
    log = []
    for name in ("payment", "commitment", "follow_payer", "repair_payer", "follow_commitment", "reconcile_journal"):
        real = getattr(tasks, name)
        monkeypatch.setattr(tasks, name, Published(real.name, log))
    monkeypatch.setattr(delivery, "queued_marks", lambda: RedisMarks(broker_url, 60))
    return log


def test_sweeps_do_not_grow_the_backlog(published, tmp_path):
    """Each effect, payer follower and the journal check has at most one message waiting, however often the sweep
    runs; the claimable payments travel together."""
    listed = ListedEffects([effect("fresh"), effect("lapsed", "claimed", NOW_MS - 1),
                            effect("held", "claimed", NOW_MS + 60_000)], [attempt("in-flight")])
    quarantine = Quarantine(tmp_path / "q")
    assert delivery.sweep(listed, quarantine) == 4
    assert [delivery.sweep(listed, quarantine) for _ in range(5)] == [0] * 5
    assert sorted((name, queue) for name, _, queue in published) == [
        ("porto.effects.follow_payer", "payers"), ("porto.effects.payment", "payments"),
        ("porto.effects.reconcile_journal", "payments")]
    batch = next(args[0] for name, args, _ in published if name == "porto.effects.payment")
    assert [effect["effect_id"] for effect in batch] == ["fresh", "lapsed"]


def test_payments_travel_in_batches_and_an_effect_already_queued_is_left_out(published):
    effects = [effect(f"pay-{number:02d}") for number in range(5 + delivery.PAYMENT_BATCH * 2 + 3)]
    assert delivery.send_payments(effects[:5]) == 5
    assert delivery.send_payments(effects) == len(effects) - 5
    batches = [args[0] for name, args, _ in published]
    assert [len(batch) for batch in batches] == [5, delivery.PAYMENT_BATCH, delivery.PAYMENT_BATCH, 3]
    assert sorted(effect["effect_id"] for batch in batches for effect in batch) == [e["effect_id"] for e in effects]


def test_a_worker_taking_a_message_lets_the_sweep_queue_it_again(published, tmp_path):
    from porto_console.effects import tasks

    listed = ListedEffects([effect("fresh"), effect("second")])
    quarantine = Quarantine(tmp_path / "q")
    assert delivery.sweep(listed, quarantine) == 3
    batch = ([effect("fresh"), effect("second")],)
    tasks.EffectTask().before_start("task-id", batch, {})  # a worker takes the batch
    assert delivery.sweep(listed, quarantine) == 2
    tasks.EffectTask().on_retry(RuntimeError("transient"), "task-id", batch, {}, None)
    assert delivery.sweep(listed, quarantine) == 0


def test_one_follower_at_a_time_watches_a_payer_and_its_hold_lapses_if_it_dies(broker_url):
    import time

    import redis

    from porto_console.effects.queued import RedisMarks

    redis.Redis.from_url(broker_url).flushdb()
    marks = RedisMarks(broker_url, 60)
    assert marks.hold("following:payer", 0.3) is True
    assert marks.hold("following:payer", 0.3) is False
    marks.let_go("following:payer")
    assert marks.hold("following:payer", 0.3) is True
    time.sleep(0.4)
    assert marks.hold("following:payer", 0.3) is True


def test_a_follower_turned_away_is_sent_again_once_the_watching_one_stops(published):
    """The watching follower may have read the payer's attempts before the one turned away was asked for."""
    assert delivery.following(PAYER, 30) is True
    assert delivery.following(PAYER, 30) is False
    delivery.stop_following(PAYER)
    assert published == [("porto.effects.follow_payer", (PAYER,), "payers")]
    assert delivery.following(PAYER, 30) is True  # the one sent again
    delivery.stop_following(PAYER)
    assert len(published) == 1  # nobody was turned away meanwhile: nothing more to send
    assert delivery.following(OTHER_PAYER, 30) is True and delivery.following(PAYER, 30) is True


def test_a_follower_that_waited_out_its_window_sends_the_one_asked_for_meanwhile_at_once(published, monkeypatch):
    """Payments that kept coming while it watched asked for a follower: the next one follows at once, not after the
    pause a head pending on chain gets."""
    from types import SimpleNamespace

    from porto_console.effects import payer_follow, tasks
    from porto_console.effects.celery_app import app

    def window_out(worker, sender, window_secs):
        assert delivery.following(sender, 30) is False  # a payment asked for a follower meanwhile: turned away
        raise payer_follow.NotYet("26 in flight at sequence 449 after 3s")

    monkeypatch.setattr(tasks, "dispatch_disabled", lambda: False)
    monkeypatch.setattr(tasks, "config", lambda: SimpleNamespace(observe_window_secs=3))
    monkeypatch.setattr(tasks, "payment_worker", lambda: None)
    monkeypatch.setattr(payer_follow, "follow_payer", window_out)
    assert app.tasks["porto.effects.follow_payer"](PAYER) == "following"
    assert published == [("porto.effects.follow_payer", (PAYER,), "payers")]
    assert tasks.follow_payer.countdowns == [0]


def test_a_broker_that_lost_its_data_gets_the_work_again(published, broker_url, tmp_path):
    import redis

    listed = ListedEffects([effect("fresh")], [attempt("in-flight")])
    quarantine = Quarantine(tmp_path / "q")
    assert delivery.sweep(listed, quarantine) == 3
    redis.Redis.from_url(broker_url).flushdb()  # messages and marks go together
    assert delivery.sweep(listed, quarantine) == 3


def test_quarantine_refuses_a_path_for_an_id(tmp_path):
    with pytest.raises(ValueError):
        Quarantine(tmp_path).add("../escape", "payment.transfer", "x", 0)


def test_each_kind_goes_to_its_own_task_and_queue(monkeypatch):
    from porto_console.effects import tasks

    queued = []

    class Queued:
        def __init__(self, name):
            self.name = name

        def apply_async(self, args, queue, countdown=0):
            queued.append((self.name, queue))

    monkeypatch.setattr(tasks, "payment", Queued("porto.effects.payment"))
    monkeypatch.setattr(tasks, "commitment", Queued("porto.effects.commitment"))
    monkeypatch.setattr(delivery, "queued_marks", NoMarks)  # whatever broker the environment names
    delivery.send({**effect("pay"), "kind": "payment.transfer"})
    delivery.send({**effect("anchor"), "kind": "batch.anchor"})
    delivery.send({**effect("other"), "kind": "unknown.kind"})
    assert queued == [("porto.effects.payment", "payments"), ("porto.effects.commitment", "commitments")]


def test_an_explicit_broker_wins_over_the_environment(monkeypatch):
    from porto_console.effects.celery_app import make_app

    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:16379/0")
    explicit, from_environment = make_app("redis://127.0.0.1:16379/11"), make_app()
    assert explicit.connection_for_write().as_uri().endswith("@127.0.0.1:16379/11")
    assert explicit.connection_for_read().as_uri().endswith("@127.0.0.1:16379/11")
    assert from_environment.connection_for_write().as_uri().endswith("@127.0.0.1:16379/0")
