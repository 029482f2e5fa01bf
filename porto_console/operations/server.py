"""The console's production server: waitress, one process with a pool of threads.

One process, because the ledger has one owner per data directory; threads,
so slow requests do not queue behind each other (the executor orders the
writes). ``PORTO_THREADS`` sizes the pool (default 8). Behind the TLS proxy
(``deploy/nginx/porto-console.conf``), ``PORTO_TRUSTED_PROXY`` names the
proxy's address: waitress then takes the client's address and scheme from
that proxy's ``X-Forwarded-For`` and ``X-Forwarded-Proto``, and strips those
headers from anyone else (docs/deployment.md). TCP_NODELAY is on (waitress's
default): workers make many small internal API calls.

The proxy reads every request whole before waitress sees it; reached
directly, waitress still holds its own line (docs/adr/0088):

- at its connection limit it accepts a new connection and answers 503 with
  ``Retry-After`` at once, where waitress would stop accepting and leave
  every new client hanging, ``/healthz`` probes included;
- a connection idle for ``CHANNEL_TIMEOUT_S``, or still sending one request
  that long after its first byte, is closed;
- a request framed two ways (``Content-Length`` with ``Transfer-Encoding``,
  ``Transfer-Encoding`` on HTTP/1.0) or with a folded header line is refused
  with 400 before any application code runs: waitress would frame it by
  chunks and serve whatever a front end that frames it otherwise took for
  the body.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping

from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HTTPRequestParser, ParsingError
from waitress.server import MultiSocketServer, TcpWSGIServer
from waitress.task import ThreadedTaskDispatcher

from porto_console.environment import Environment, read_environment

DEFAULT_THREADS = Environment.model_fields["threads"].default  # with PORTO_THREADS unset
# Waitress buffers a body whole (to disk past a point) before any view sees it, up to 1 GiB by default: a
# declared body larger than any view reads (the internal API's 1 MiB, Django's 2.5 MB form uploads) is refused
# with 413 at once, credential or not.
MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024
CONNECTION_LIMIT = 100
CHANNEL_TIMEOUT_S = 30
# How often idle and slow connections are looked for: a connection is closed at most this long after its time.
CLEANUP_INTERVAL_S = 5
RETRY_AFTER_S = 5
_BUSY_BODY = b"The console is at its connection limit; retry shortly.\n"
BUSY_RESPONSE = (b"HTTP/1.1 503 Service Unavailable\r\nServer: porto\r\nRetry-After: %d\r\n"
                 b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                 % (RETRY_AFTER_S, len(_BUSY_BODY), _BUSY_BODY))


def server_options(variables: Mapping[str, str] | None = None) -> dict[str, object]:
    """Waitress's options under ``variables``, or this process's environment."""
    environment = read_environment(variables)
    options: dict[str, object] = {"threads": environment.threads,
                                  "ident": "porto", "expose_tracebacks": False,
                                  "max_request_body_size": MAX_REQUEST_BODY_BYTES,
                                  "connection_limit": CONNECTION_LIMIT, "channel_timeout": CHANNEL_TIMEOUT_S,
                                  "cleanup_interval": CLEANUP_INTERVAL_S}
    proxy = environment.trusted_proxy
    if proxy:
        options.update(trusted_proxy=proxy, trusted_proxy_count=1,
                       trusted_proxy_headers="x-forwarded-for x-forwarded-proto",
                       clear_untrusted_proxy_headers=True)
    return options


def client_address(request) -> str | None:
    """The client's address for sign-in lockouts (``AXES_CLIENT_IP_CALLABLE``): the peer waitress saw, or, from
    the trusted proxy only, the address that proxy wrote in ``X-Forwarded-For``; never a header a client chose."""
    return request.META.get("REMOTE_ADDR")


class SingleFramingParser(HTTPRequestParser):
    """waitress's parser, refusing any request whose body a front end could delimit otherwise than waitress."""

    def __init__(self, adj) -> None:
        super().__init__(adj)
        self.started = time.time()  # the request's first byte: it must arrive whole within the channel timeout

    def parse_header(self, header_plus: bytes) -> None:
        if any(line[:1] in (b" ", b"\t") for line in header_plus.split(b"\r\n")[1:]):
            raise ParsingError("a folded header line (obs-fold) is refused")
        super().parse_header(header_plus)
        refused = self._second_framing()
        if refused:
            self.expect_continue = False  # the refusal is the answer: no 100 Continue invites the body
            raise ParsingError(refused)

    def _second_framing(self) -> str | None:
        if self.chunked and "CONTENT_LENGTH" in self.headers:
            return "Content-Length and Transfer-Encoding together are refused"
        if "TRANSFER_ENCODING" in self.headers:  # waitress leaves it only where it frames by Content-Length
            return f"Transfer-Encoding on HTTP/{self.version} is refused"
        return None


class SingleFramingChannel(HTTPChannel):
    parser_class = SingleFramingParser


class GuardedServer(TcpWSGIServer):
    """A waitress listener that keeps accepting at its connection limit, to answer 503 instead of hanging, and
    closes connections that send one request for longer than the channel timeout."""

    channel_class = SingleFramingChannel
    next_channel_cleanup: float  # waitress's own, which this listener's ``readable`` takes over
    in_connection_overflow: bool

    def readable(self) -> bool:
        now = time.time()
        if now >= self.next_channel_cleanup:
            self.next_channel_cleanup = now + self.adj.cleanup_interval
            self.maintenance(now)
        if self.in_connection_overflow and len(self.active_channels) < self.adj.connection_limit:
            self.in_connection_overflow = False
            self.logger.info("open connections below the connection limit: serving new connections again")
        return self.accepting

    def handle_accept(self) -> None:
        if len(self.active_channels) < self.adj.connection_limit:
            super().handle_accept()
            return
        if not self.in_connection_overflow:
            self.in_connection_overflow = True
            self.logger.warning("open connections reached the connection limit: new connections get 503")
        accepted = self.accept()
        if accepted is not None:
            _turn_away(accepted[0])

    def maintenance(self, now: float) -> None:
        super().maintenance(now)
        cutoff = now - self.adj.channel_timeout
        for channel in self.active_channels.values():
            if not channel.requests and channel.request is not None and channel.request.started < cutoff:
                channel.will_close = True


def _turn_away(connection: socket.socket) -> None:
    """Answer 503 on a connection waitress has no room for and close it, without ever blocking the loop: what
    the client already sent is read first, so closing does not reset the connection under the answer."""
    connection.setblocking(False)
    try:
        connection.recv(65536)
    except OSError:
        pass
    try:
        connection.send(BUSY_RESPONSE)
        connection.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        connection.close()


def bind(application, *, host: str, port: int):
    """A waitress server listening on ``host:port``; ``run()`` serves until SIGTERM or Ctrl-C (the caller turns
    SIGTERM into KeyboardInterrupt) and returns once its sockets and threads are closed. It is waitress's
    ``create_server`` with the guarded listener."""
    adj = Adjustments(host=host, port=port, **server_options())
    dispatcher = ThreadedTaskDispatcher()
    dispatcher.set_thread_count(adj.threads)
    socket_map: dict = {}
    listeners = [GuardedServer(application, socket_map, dispatcher=dispatcher, adj=adj, sockinfo=sockinfo)
                 for sockinfo in adj.listen]
    if len(listeners) == 1:
        return listeners[0]
    return MultiSocketServer(socket_map, adj, [(each.effective_host, each.effective_port) for each in listeners],
                             dispatcher, listeners[-1].log_info)
