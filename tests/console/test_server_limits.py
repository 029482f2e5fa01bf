"""The console's waitress reached directly, bound as the launcher binds it: at its connection limit a new client
is told 503 at once, a request framed two ways or with a folded header is refused before the application sees
it, and a request that never finishes arriving is cut off."""

from __future__ import annotations

import re
import socket
import threading
import time

import pytest
from axes.helpers import get_client_ip_address
from django.core.handlers.wsgi import WSGIRequest
from waitress import wasyncore

from porto_console.operations.server import CHANNEL_TIMEOUT_S, CONNECTION_LIMIT, RETRY_AFTER_S, bind

GUARD_S = 10  # a guard against a server that never answers, not a speed requirement
HIDDEN = b"GET /hidden HTTP/1.1\r\nHost: localhost\r\n\r\n"


class Served:
    """The real server in front of an application that only records the paths it is asked for."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.lockout_addresses: list[str | None] = []
        self.server = bind(self._application, host="127.0.0.1", port=0)
        self.loop = threading.Thread(target=self.server.run, daemon=True)
        self.loop.start()

    def _application(self, environ, start_response):
        self.paths.append(environ["PATH_INFO"])
        self.lockout_addresses.append(get_client_ip_address(WSGIRequest(environ)))
        body = environ["wsgi.input"].read()
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body) + 3))])
        return [b"ok " + body]

    def connect(self, source: str = "127.0.0.1") -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.server.effective_port), timeout=GUARD_S,
                                        source_address=(source, 0))

    def close(self) -> None:
        """Every socket closed on the server's own loop, which then ends; then its threads."""
        self.server.trigger.pull_trigger(lambda: wasyncore.close_all(self.server._map))
        self.loop.join(GUARD_S)
        self.server.task_dispatcher.shutdown()


@pytest.fixture
def served(monkeypatch):
    monkeypatch.setenv("PORTO_TRUSTED_PROXY", "127.0.0.1")  # as behind nginx on the same host
    running = Served()
    yield running
    running.close()


def exchange(connection: socket.socket, request: bytes) -> bytes:
    """Send ``request`` and read until the server closes the connection."""
    connection.sendall(request)
    answer = b""
    try:
        while chunk := connection.recv(65536):
            answer += chunk
    except ConnectionResetError:  # closed before it read our request: what it sent first is its answer
        pass
    return answer


def one_response(connection: socket.socket, request: bytes) -> bytes:
    """Send ``request`` on a kept-alive connection and read one response with a body of ``ok``."""
    connection.sendall(request)
    answer = b""
    while not answer.endswith(b"\r\n\r\nok "):
        chunk = connection.recv(65536)
        assert chunk, answer
        answer += chunk
    return answer


def test_a_plain_request_and_a_chunked_one_are_served(served):
    with served.connect() as connection:
        answer = exchange(connection, b"POST /form HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
                                      b"Connection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"ok abc")
    with served.connect() as connection:
        assert exchange(connection, b"GET /plain HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                        ).startswith(b"HTTP/1.1 200 OK")
    assert served.paths == ["/form", "/plain"]


def test_at_the_connection_limit_a_new_client_gets_503_with_retry_after_and_is_served_once_room_frees(served):
    held = [served.connect() for _ in range(CONNECTION_LIMIT)]
    try:
        for number, connection in enumerate(held):
            one_response(connection, f"GET /held/{number} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        with served.connect() as late:
            answer = exchange(late, b"GET /late HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), answer
        assert f"\r\nRetry-After: {RETRY_AFTER_S}\r\n".encode() in answer
        assert "/late" not in served.paths
        held.pop().close()
        assert _served_again(served), "a connection was freed, yet new clients are still turned away"
    finally:
        for connection in held:
            connection.close()


def _served_again(served: Served) -> bool:
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:  # until waitress has seen the freed connection close
        with served.connect() as connection:
            if exchange(connection, b"GET /again HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
                        ).startswith(b"HTTP/1.1 200 OK"):
                return True
    return False


TWO_FRAMINGS = {
    "content-length then chunked": b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 48\r\n"
                                   b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + HIDDEN,
    "chunked then content-length": b"POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
                                   b"Content-Length: 48\r\n\r\n0\r\n\r\n" + HIDDEN,
    "folded transfer-encoding": b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 48\r\n"
                                b"Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n" + HIDDEN,
    "tab-folded transfer-encoding": b"POST / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding:\r\n\tchunked\r\n"
                                    b"\r\n0\r\n\r\n" + HIDDEN,
    "folded other header": b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Note: first\r\n second\r\n\r\n" + HIDDEN,
    "chunked on HTTP/1.0": b"POST / HTTP/1.0\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
                           b"Content-Length: 5\r\n\r\n0\r\n\r\n" + HIDDEN,
}


@pytest.mark.parametrize("request_bytes", TWO_FRAMINGS.values(), ids=TWO_FRAMINGS.keys())
def test_a_request_framed_two_ways_or_folded_is_refused_with_400_before_the_application(served, request_bytes):
    with served.connect() as connection:
        answer = exchange(connection, request_bytes)
    assert re.match(rb"HTTP/1\.[01] 400 Bad Request\r\n", answer), answer  # 1.0 where refused before the version
    assert b"200 OK" not in answer  # one answer, and the connection closed after it
    assert served.paths == []


def test_a_request_still_arriving_a_channel_timeout_after_its_first_byte_is_cut_off(served):
    """Trickling a byte now and then keeps a connection active to waitress; its request's age is what counts."""
    with served.connect() as connection:
        connection.sendall(b"GET /slow HTTP/1.1\r\nHost: localhost\r\n")
        channel = _channel_reading_a_request(served)
        channel.request.started -= CHANNEL_TIMEOUT_S + 1  # its first byte, a channel timeout ago
        served.server.maintenance(time.time())
        assert connection.recv(65536) == b""  # closed by the server, no answer
    assert served.paths == []


def _channel_reading_a_request(served: Served):
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:  # until waitress has read the partial header
        for channel in list(served.server.active_channels.values()):
            if channel.request is not None:
                return channel
        time.sleep(0.01)
    raise AssertionError("waitress never read the partial request")


def test_a_lockout_counts_the_address_the_proxy_forwarded_and_no_address_a_client_chose(served):
    claimed = (b"X-Forwarded-For: 203.0.113.7\r\nX-Real-IP: 198.51.100.1\r\nClient-IP: 198.51.100.2\r\n"
               b"Forwarded: for=198.51.100.3\r\n")
    for source in ("127.0.0.1", "127.0.0.2"):  # the trusted proxy, then a client reaching waitress itself
        with served.connect(source) as connection:
            exchange(connection, b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + claimed + b"\r\n")
    assert served.lockout_addresses == ["203.0.113.7", "127.0.0.2"]
