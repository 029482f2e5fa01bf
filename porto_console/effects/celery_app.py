"""The Celery application of the effect workers: one queue per effect kind, late acknowledgement.

A message is acknowledged only after its task returns, and a worker that
dies mid-task leaves it to be delivered again (``acks_late`` with
``task_reject_on_worker_lost``). Redelivery is safe because correctness rests
on the ledger: a task does nothing without a live ``ClaimEffect`` lease, and
every command it sends has an ID derived from what it means.

Broker: ``CELERY_BROKER_URL`` (Redis in CI and deployment). Without one the
app runs tasks eagerly in the calling process, so `make run` needs no broker
server.

A broker restart is survived, not fatal: the worker keeps retrying the
connection for ever (``broker_connection_max_retries = None``), on startup
too, with Redis socket timeouts and health checks so a dead connection is
noticed, and cancels tasks whose message it can no longer acknowledge (they
are delivered again; every step is idempotent). The Redis transport is
``broker_transport``'s, which survives a kombu error on reconnect that
otherwise ends the worker. Whatever still dies is
restarted by the supervisor (``docs/effects.md``: Procfile, systemd units).

    celery -A porto_console.effects.celery_app worker -Q payers,payments,commitments,maintenance
    celery -A porto_console.effects.celery_app beat
"""

from __future__ import annotations

import logging

from celery import Celery
from kombu.entity import Queue

from porto_console.effects.broker_transport import TRANSPORT as REDIS_TRANSPORT
from porto_console.environment import EMBEDDED_BROKER, read_environment

PAYERS, PAYMENTS, COMMITMENTS, MAINTENANCE = "payers", "payments", "commitments", "maintenance"
# A worker takes from its queues in this order (the Redis transport's "priority" strategy): a payer's follower and
# repair before new payments, so a gap never waits behind the work it blocks.
QUEUE_ORDER = (PAYERS, PAYMENTS, COMMITMENTS, MAINTENANCE)
QUEUE_FOR_KIND = {"payment.transfer": PAYMENTS, "batch.anchor": COMMITMENTS}
# httpx logs every request at INFO: a batch of payments makes dozens (each broadcast, each round trip), and the
# worker's own lines already say what became of every payment. Its warnings still show.
logging.getLogger("httpx").setLevel(logging.WARNING)


def queued_mark_secs() -> int:
    """How long a queued mark lasts (``queued``): at least until an unacknowledged message comes back."""
    return read_environment().queued_mark_secs


def make_app(broker_url: str | None = None) -> Celery:
    environment = read_environment()
    broker = broker_url or environment.broker_url
    # No Django fixup: workers never load the console or its database, whatever the environment says.
    app = Celery("porto_effects", broker=broker, include=["porto_console.effects.tasks"], fixups=[])
    app.conf.update(
        # Celery lets CELERY_BROKER_URL override broker_url; the read and write URLs make an explicit broker win.
        broker_read_url=broker,
        broker_write_url=broker,
        broker_transport=REDIS_TRANSPORT if broker.startswith(("redis://", "rediss://")) else None,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_queues=[Queue(name) for name in QUEUE_ORDER],
        task_default_queue=MAINTENANCE,
        task_always_eager=broker == EMBEDDED_BROKER,
        broker_connection_retry_on_startup=True,
        broker_connection_retry=True,
        broker_connection_max_retries=None,  # never give up on the broker: a restart is waited out
        broker_channel_error_retry=True,
        worker_cancel_long_running_tasks_on_connection_loss=True,
        broker_heartbeat=0,
        broker_transport_options={
            # An unacknowledged message returns to the queue after this long (Redis).
            "visibility_timeout": environment.celery_visibility_secs,
            "socket_timeout": 30,
            "socket_connect_timeout": 5,
            "socket_keepalive": True,
            "retry_on_timeout": True,
            "health_check_interval": 10,
            "queue_order_strategy": "priority",
        },
        beat_schedule={
            # A sweep nobody ran before the next one is due is dropped: sweeps do not pile up while workers are down.
            "sweep-effects": {"task": "porto.effects.sweep", "schedule": environment.sweep_secs,
                              "options": {"expires": environment.sweep_secs}},
            # Beat asks the owner whether a backup is due; the owner keeps the interval.
            "backup-if-due": {"task": "porto.effects.backup", "schedule": environment.backup_tick_secs,
                              "options": {"expires": environment.backup_tick_secs}},
        },
    )
    return app


app = make_app()
