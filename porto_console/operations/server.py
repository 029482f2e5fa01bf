"""The console's production server: waitress, one process with a pool of threads.

One process, because the ledger has one owner per data directory; threads,
so slow requests do not queue behind each other (the executor orders the
writes). ``PORTO_THREADS`` sizes the pool (default 8). Behind a TLS proxy,
``PORTO_TRUSTED_PROXY`` names the proxy's address: waitress then takes the
client's address and scheme from that proxy's ``X-Forwarded-For`` and
``X-Forwarded-Proto``, and strips those headers from anyone else
(docs/deployment.md). TCP_NODELAY is on (waitress's default): workers make
many small internal API calls.
"""

from __future__ import annotations

import os

from waitress.server import create_server

DEFAULT_THREADS = 8
# Waitress buffers a body whole (to disk past a point) before any view sees it, up to 1 GiB by default: a
# declared body larger than any view reads (the internal API's 1 MiB, Django's 2.5 MB form uploads) is refused
# with 413 at once, credential or not.
MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024


def server_options(environ: dict[str, str] | os._Environ = os.environ) -> dict[str, object]:
    options: dict[str, object] = {"threads": int(environ.get("PORTO_THREADS", str(DEFAULT_THREADS))),
                                  "ident": "porto", "expose_tracebacks": False,
                                  "max_request_body_size": MAX_REQUEST_BODY_BYTES}
    proxy = environ.get("PORTO_TRUSTED_PROXY")
    if proxy:
        options.update(trusted_proxy=proxy, trusted_proxy_count=1,
                       trusted_proxy_headers="x-forwarded-for x-forwarded-proto",
                       clear_untrusted_proxy_headers=True)
    return options


def bind(application, *, host: str, port: int):
    """A waitress server listening on ``host:port``; ``run()`` serves until SIGTERM or Ctrl-C (the caller turns
    SIGTERM into KeyboardInterrupt) and returns once its sockets and threads are closed."""
    return create_server(application, host=host, port=port, **server_options())
