"""Which effects and follow-ups already have a message on the broker, so the sweep does not queue them again.

A mark is set when a message is queued (``SET NX`` with an expiry, on the
broker's own Redis) and cleared when a worker starts the task; a task that
retries or queues its own next look sets it again. So however often the
sweep runs, each effect, transaction and journal check has at most one
message waiting. The marks are only an economy: correctness rests on the
ledger's claims and command IDs. A mark outlives a lost message by at most
``PORTO_QUEUED_MARK_SECS`` (default the broker's visibility timeout), and a
broker that loses its data loses the marks with the messages, so the next
sweep queues the work again. Without a Redis broker (the embedded,
eager broker of `make run`) nothing is marked and everything is sent.

A *hold* is a mark with its own expiry that a running task takes and lets go
of: it keeps a second copy of the same work (a payer's follower) from running
beside the first, and lapses by itself if its holder dies.
"""

from __future__ import annotations

import logging
from typing import Protocol, TypedDict

import redis

log = logging.getLogger("porto.effects.queued")

PREFIX = "porto:effects:queued:"


class Marks(Protocol):
    def mark(self, subject: str) -> bool:
        """Mark ``subject`` as queued; False when it already was (then do not queue it again)."""

    def clear(self, subject: str) -> None:
        """A worker took the message: the subject may be queued again."""

    def take(self, subject: str) -> bool:
        """Clear ``subject``'s mark; True when it was set (or Redis cannot say: then act as if it was)."""

    def hold(self, subject: str, lease_secs: float) -> bool:
        """Take a hold on ``subject`` for at most ``lease_secs``; False when someone else holds it."""

    def let_go(self, subject: str) -> None:
        """Give up a hold this process took."""


HELD = "porto:effects:held:"


class Expiry(TypedDict, total=False):
    """A mark's expiry, as ``SET`` takes it: in seconds (``ex``) or milliseconds (``px``)."""

    ex: int
    px: int


class RedisMarks:
    def __init__(self, url: str, ttl_secs: int) -> None:
        assert ttl_secs > 0
        self._redis = redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        self._ttl_secs = ttl_secs

    def mark(self, subject: str) -> bool:
        return self._take(PREFIX + subject, {"ex": self._ttl_secs}, f"cannot mark {subject} as queued")

    def clear(self, subject: str) -> None:
        self._drop(PREFIX + subject, f"cannot clear the queued mark of {subject}")

    def take(self, subject: str) -> bool:
        try:
            return bool(self._redis.delete(PREFIX + subject))
        except redis.RedisError as error:
            log.info("cannot take the mark of %s (%s): taking it as set", subject, error)
            return True

    def hold(self, subject: str, lease_secs: float) -> bool:
        return self._take(HELD + subject, {"px": max(int(lease_secs * 1000), 1)}, f"cannot hold {subject}")

    def let_go(self, subject: str) -> None:
        self._drop(HELD + subject, f"cannot let go of {subject}")

    def _take(self, key: str, expiry: Expiry, failing: str) -> bool:
        """``SET NX`` with an expiry; True also when Redis cannot answer: the work goes on without the mark."""
        try:
            return bool(self._redis.set(key, b"1", nx=True, **expiry))
        except redis.RedisError as error:
            log.info("%s (%s): going on without it", failing, error)
            return True

    def _drop(self, key: str, failing: str) -> None:
        try:
            self._redis.delete(key)
        except redis.RedisError as error:
            log.info("%s (%s); it expires by itself", failing, error)


class NoMarks:
    """The embedded broker runs tasks at once: there is never a message waiting."""

    def mark(self, subject: str) -> bool:
        return True

    def clear(self, subject: str) -> None:
        return None

    def take(self, subject: str) -> bool:
        return False

    def hold(self, subject: str, lease_secs: float) -> bool:
        return True

    def let_go(self, subject: str) -> None:
        return None


def marks_for(broker_url: str, ttl_secs: int) -> Marks:
    if broker_url.startswith(("redis://", "rediss://", "unix://")):
        return RedisMarks(broker_url, ttl_secs)
    return NoMarks()
