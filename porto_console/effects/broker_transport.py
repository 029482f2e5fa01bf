"""kombu's Redis transport, with one way of dying on a broker restart taken away.

With kombu 5.7 a worker whose broker connection drops while it holds
unacknowledged messages (``task_acks_late``: any task in flight) closes the
channel and tries to give those messages back through a connection already
detached from its client; ``Channel._connparams`` then raises
``AttributeError: 'NoneType' object has no attribute 'hostname'``, which
``Consumer.on_connection_error_after_connected`` does not expect, and the
worker exits ("Unrecoverable error"). Reproduced with a slow task in flight
and Redis killed (``tests/effects/test_broker_restart.py``).

Here that restore gives up instead: the messages stay in Redis's unacked
index, where the broker hands them out again after the visibility timeout
(if Redis kept them; after a restart with no persistence they are gone,
and the sweep queues the work again). The worker reconnects and carries on.
"""

from __future__ import annotations

import logging

from kombu.transport import redis as kombu_redis

log = logging.getLogger("porto.effects.broker")


class QoS(kombu_redis.QoS):
    def restore_unacked(self, client=None):
        try:
            return super().restore_unacked(client)
        except AttributeError as error:  # the connection went away under the restore (see the module)
            log.warning("could not give back %d unacknowledged message(s) on a lost connection (%s); "
                        "the broker redelivers them after the visibility timeout", len(self._delivered), error)
            self._delivered.clear()
            return None


class Channel(kombu_redis.Channel):
    QoS = QoS


class Transport(kombu_redis.Transport):
    Channel = Channel


TRANSPORT = f"{__name__}:Transport"
