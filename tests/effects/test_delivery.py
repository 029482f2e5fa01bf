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


def effect(effect_id, status="pending", claim_expires_ms=None):
    claim = None if claim_expires_ms is None else {"worker_id": "w", "claimed_at_ms": 0,
                                                   "expires_at_ms": claim_expires_ms}
    return {"effect_id": effect_id, "kind": "payment.transfer", "status": status, "revision": 1, "claim": claim,
            "payload": {}}


def attempt(effect_id, outcome="submitted"):
    return {"attempt_id": f"tx-{effect_id}", "effect_id": effect_id, "outcome": outcome,
            "transaction_hash": "0x" + "ab" * 32}


@pytest.fixture
def sent(monkeypatch):
    sent = []
    monkeypatch.setattr(delivery, "send", lambda effect: sent.append(effect) or True)
    monkeypatch.setattr(delivery, "check_journal", lambda: False)
    monkeypatch.setattr(delivery.time, "time_ns", lambda: NOW_MS * 1_000_000)
    return sent


def batch(effect_id, state="submitted"):
    return {"batch_id": f"batch-{effect_id}", "anchor_effect_id": effect_id, "state": state,
            "transaction_hash": "0x" + "cd" * 32}


@pytest.fixture
def observed(monkeypatch):
    observed = []
    monkeypatch.setattr(delivery, "observe", lambda attempt: observed.append(attempt) or True)
    monkeypatch.setattr(delivery, "observe_batch", lambda batch: observed.append(batch) or True)
    return observed


def test_sweep_sends_pending_and_lapsed_effects_but_not_live_claims_or_quarantined(sent, observed, tmp_path):
    quarantine = Quarantine(tmp_path / "q")
    quarantine.add("poisoned", "payment.transfer", "ValueError: bad", 8)
    listed = ListedEffects([effect("fresh"), effect("poisoned"), effect("lapsed", "claimed", NOW_MS - 1),
                            effect("held", "claimed", NOW_MS + 60_000)])
    assert delivery.sweep(listed, quarantine) == 2
    assert [e["effect_id"] for e in sent] == ["fresh", "lapsed"]


def test_sweep_observes_every_in_flight_attempt_except_quarantined_ones(sent, observed, tmp_path):
    quarantine = Quarantine(tmp_path / "q")
    quarantine.add("poisoned", "payment.transfer", "Poison: observation rejected", 8)
    listed = ListedEffects([], [attempt("paid-late"), attempt("poisoned"), attempt("signed", "pending")])
    assert delivery.sweep(listed, quarantine) == 2
    assert sent == [] and [a["effect_id"] for a in observed] == ["paid-late", "signed"]


def test_sweep_looks_at_every_in_flight_anchor_except_quarantined_ones(sent, observed, tmp_path):
    quarantine = Quarantine(tmp_path / "q")
    quarantine.add("poisoned", "batch.anchor", "Poison: observation rejected", 8)
    listed = ListedEffects([], batches=[batch("anchor-lost"), batch("poisoned"), batch("anchor-unknown", "uncertain")])
    assert delivery.sweep(listed, quarantine) == 2
    assert sent == [] and [b["anchor_effect_id"] for b in observed] == ["anchor-lost", "anchor-unknown"]


def test_a_look_at_an_in_flight_transaction_names_the_effect_it_carries_out(monkeypatch):
    looks = []
    monkeypatch.setattr(delivery, "look_again", lambda task, transaction_hash, **options: looks.append(
        (task.name, transaction_hash, options["effect_id"])) or True)
    delivery.observe({"transaction_hash": "0x01", "effect_id": "run-1.artist-a.effect"})
    delivery.observe_batch({"transaction_hash": "0x02", "anchor_effect_id": "batch-1.anchor"})
    assert looks == [("porto.effects.follow", "0x01", "run-1.artist-a.effect"),
                     ("porto.effects.follow_commitment", "0x02", "batch-1.anchor")]


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

    def apply_async(self, args=(), kwargs=None, queue=None, countdown=0):
        self.log.append((self.name, tuple(args)))


@pytest.fixture
def published(monkeypatch, broker_url):
    """The real marks on this session's redis-server; publishing recorded instead of sent."""
    import redis

    from porto_console.effects import tasks
    from porto_console.effects.queued import RedisMarks

    redis.Redis.from_url(broker_url).flushdb()
    log = []
    for name in ("payment", "commitment", "follow", "follow_commitment", "reconcile_journal"):
        real = getattr(tasks, name)
        monkeypatch.setattr(tasks, name, Published(real.name, log))
    monkeypatch.setattr(delivery, "queued_marks", lambda: RedisMarks(broker_url, 60))
    monkeypatch.setattr(delivery.time, "time_ns", lambda: NOW_MS * 1_000_000)
    return log


def test_sweeps_do_not_grow_the_backlog(published, tmp_path):
    """Each effect, transaction and the journal check has at most one message waiting, however often the sweep runs."""
    listed = ListedEffects([effect("fresh"), effect("lapsed", "claimed", NOW_MS - 1),
                            effect("held", "claimed", NOW_MS + 60_000)], [attempt("in-flight")])
    quarantine = Quarantine(tmp_path / "q")
    assert delivery.sweep(listed, quarantine) == 4
    assert [delivery.sweep(listed, quarantine) for _ in range(5)] == [0] * 5
    assert sorted(name for name, _ in published) == ["porto.effects.follow", "porto.effects.payment",
                                                     "porto.effects.payment", "porto.effects.reconcile_journal"]


def test_a_worker_taking_a_message_lets_the_sweep_queue_it_again(published, tmp_path):
    from porto_console.effects import tasks

    listed = ListedEffects([effect("fresh")])
    quarantine = Quarantine(tmp_path / "q")
    assert delivery.sweep(listed, quarantine) == 2
    tasks.EffectTask().before_start("task-id", (effect("fresh"),), {})  # a worker starts the effect's task
    assert delivery.sweep(listed, quarantine) == 1
    tasks.EffectTask().on_retry(RuntimeError("transient"), "task-id", (effect("fresh"),), {}, None)
    assert delivery.sweep(listed, quarantine) == 0


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

        def apply_async(self, args, queue):
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
