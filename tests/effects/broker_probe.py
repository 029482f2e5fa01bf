"""A Celery app with the effect workers' settings (``make_app``) and one slow task, to restart the broker under.

Each ``slow`` task holds its message unacknowledged for a few seconds (late
acknowledgement, as every effect task) and queues the next one, so the
worker always has messages in flight when the broker dies.
"""

from __future__ import annotations

import time

from porto_console.effects.celery_app import PAYMENTS, make_app

app = make_app()
app.conf.include = []
HOLD_SECS = 4


@app.task(name="probe.slow")
def slow(number: int) -> int:
    time.sleep(HOLD_SECS)
    slow.apply_async(args=[number + 1], queue=PAYMENTS)
    return number
