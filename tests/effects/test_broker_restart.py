"""Workers survive broker restarts: Redis SIGKILLed five times while tasks hold unacknowledged messages.

With kombu 5.7's own Redis transport this worker exits on the second or
third restart ("Unrecoverable error: AttributeError: 'NoneType' object has
no attribute 'hostname'", raised while it gives back its unacknowledged
messages on a connection already detached); ``broker_transport`` keeps it
alive. The fault campaign covers the whole stack under Redis restarts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from porto_console.effects.celery_app import PAYMENTS, make_app
from tests.effects.redis_server import RedisServer
from tests.effects.stack import ROOT, wait_until

pytestmark = [pytest.mark.slow_kill, pytest.mark.worker]

RESTARTS = 5


def test_a_worker_with_messages_in_flight_survives_redis_restarts(tmp_path):
    broker = RedisServer(tmp_path / "redis").start()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CELERY_BROKER_URL": broker.url(0),
           "PORTO_CELERY_VISIBILITY_SECS": "5"}
    log_path = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.effects.broker_probe", "worker", "-Q", "payments", "-c", "2",
         "-n", "probe@%h", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
        cwd=ROOT, env=env, stdout=open(log_path, "ab"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "ready." in log_path.read_text(), "the worker to start", timeout=30)
        publish(broker.url(0), range(4))
        for restart in range(RESTARTS):
            time.sleep(3)
            broker.kill()
            time.sleep(restart % 3 + 1)
            broker.start()
            publish(broker.url(0), [1000 * (restart + 1)])
        time.sleep(12)
        log = log_path.read_text()
        assert worker.poll() is None, log[-3000:]
        assert "Unrecoverable error" not in log
        assert log.count("Connected to") > RESTARTS // 2  # it reconnected
        wait_until(lambda: log_path.read_text().count("succeeded") > log.count("succeeded"),
                   "a task to succeed after the last restart", timeout=30)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        broker.stop()


def publish(url: str, numbers) -> None:
    publisher = make_app(url)
    for number in numbers:
        publisher.send_task("probe.slow", args=[number], queue=PAYMENTS)
    publisher.close()
