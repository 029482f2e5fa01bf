"""The console as deployed: launched as ``make run`` launches it, behind the shipped nginx site
(``deploy/nginx/porto-console.conf``, ``tests/support/nginx.py``). TLS, the HTTP redirect, the internal API
and the metrics allow-list through it; a slowloris crowd that does not slow ``/healthz`` and is cut off; the
smuggling framings refused with nothing reaching Django."""

from __future__ import annotations

import json
import re
import socket
import ssl
import threading
import time

import httpx
import pytest
from django.conf import settings

from porto_console.operations.server import CONNECTION_LIMIT
from tests.console.test_launcher import started, with_demo_repository
from tests.console.test_server_limits import TWO_FRAMINGS
from tests.support.nginx import SITE, Nginx

pytestmark = pytest.mark.slow

METRICS_TOKEN = "porto-test-only-metrics-token-0123456789"
SLOW_CLIENTS = 240
PER_CLIENT_LIMIT = 32
HEALTH_BOUND_S = 1.0  # the finding's bound: /healthz answers within a second while the crowd trickles
GUARD_S = 60  # a guard against a proxy that never cuts a connection off, not a speed requirement


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, initialised_repository):
    console = started(with_demo_repository(tmp_path_factory.mktemp("proxied"), initialised_repository),
                      PORTO_TRUSTED_PROXY="127.0.0.1", PORTO_METRICS_TOKEN=METRICS_TOKEN)
    proxy = None
    try:
        proxy = Nginx(tmp_path_factory.mktemp("nginx"), console.port).start()
        yield console, proxy
    finally:
        if proxy is not None:
            proxy.stop()
        assert console.stop() == 0


def https(proxy: Nginx, source: str = "127.0.0.1") -> httpx.Client:
    """A client that trusts only the proxy's certificate, connecting from ``source``."""
    trusted = ssl.create_default_context(cafile=str(proxy.certificate))
    return httpx.Client(base_url=f"https://127.0.0.1:{proxy.https_port}", timeout=GUARD_S,
                        transport=httpx.HTTPTransport(local_address=source, verify=trusted))


def log_lines(console) -> list[dict]:
    return [json.loads(line) for line in (console.var_dir / "log" / "console.log").read_text().splitlines()]


def request_lines(console) -> list[dict]:
    return [line for line in log_lines(console) if line.get("logger") == "porto.requests"]


def logged(console, request_id: str) -> dict:
    """The console's log line for the request ``request_id`` (nginx's ``$request_id``), once it is written."""
    deadline = time.monotonic() + GUARD_S
    while time.monotonic() < deadline:
        for line in request_lines(console):
            if line.get("request_id") == request_id:
                return line
        time.sleep(0.05)
    raise AssertionError(f"no request line for {request_id}")


def test_the_console_answers_over_tls_and_the_internal_api_is_reached_through_the_proxy(deployed):
    console, proxy = deployed
    with https(proxy) as client:
        health = client.get("/healthz")
        internal = client.get("/internal/head")
    assert (health.status_code, health.json()["status"]) == (200, "ready")
    assert "max-age=" in health.headers["strict-transport-security"]  # Django saw the request as HTTPS
    assert (internal.status_code, internal.json()["code"]) == (401, "UNAUTHENTICATED")
    assert logged(console, internal.headers["x-request-id"])["status"] == 401


def test_plain_http_is_redirected_to_https_with_308(deployed):
    _, proxy = deployed
    answer = httpx.post(f"http://127.0.0.1:{proxy.http_port}/login/?next=/", data={"username": "x"})
    assert (answer.status_code, answer.headers["location"]) == (308, "https://console.porto.example/login/?next=/")


def test_the_proxys_access_log_never_holds_an_enrolment_token(deployed):
    _, proxy = deployed
    token = "a-one-time-token-that-must-never-be-logged"
    with https(proxy) as client:
        opened = client.get(f"/enrol/{token}/")
        plain = client.get("/healthz")
    assert opened.status_code in (403, 404)  # no such link: it is refused, and the attempt logged
    deadline = time.monotonic() + GUARD_S
    while plain.headers["x-request-id"] not in proxy.access_log() and time.monotonic() < deadline:
        time.sleep(0.05)  # nginx writes a request's line once the request is done
    lines = proxy.access_log()
    assert opened.headers["x-request-id"] in lines and "/enrol/<redacted>/" in lines
    assert token not in lines and "/healthz" in lines
    written = lines.count("\n")
    assert httpx.get(f"http://127.0.0.1:{proxy.http_port}/enrol/{token}/").status_code == 308
    while proxy.access_log().count("\n") == written and time.monotonic() < deadline + GUARD_S:
        time.sleep(0.05)
    assert proxy.access_log().count("\n") > written and token not in proxy.access_log()


def test_forwarded_headers_a_client_sends_are_replaced_by_the_proxys(deployed):
    console, proxy = deployed
    with https(proxy) as client:
        refused = client.get("/metrics", headers={"Authorization": "Bearer wrong", "X-Forwarded-For": "203.0.113.7",
                                                  "X-Forwarded-Proto": "http"})
    assert refused.status_code == 401
    assert "max-age=" in refused.headers["strict-transport-security"]  # still HTTPS to Django
    warning = next(line for line in log_lines(console) if line.get("request_id") == refused.headers["x-request-id"]
                   and line.get("message", "").startswith("metrics refused"))
    assert warning["remote_addr"] == "127.0.0.1"


def test_metrics_are_served_to_the_allow_list_only(deployed):
    _, proxy = deployed
    with https(proxy) as allowed, https(proxy, source="127.0.0.2") as elsewhere:
        scraped = allowed.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        denied = elsewhere.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert scraped.status_code == 200 and "porto_ledger_head_sequence" in scraped.text
    assert denied.status_code == 403 and "x-request-id" not in denied.headers  # nginx's refusal, not the console's


def test_the_shipped_body_limit_is_the_largest_body_django_reads():
    limit = re.search(r"^\s*client_max_body_size (\d+);", SITE.read_text(), re.MULTILINE)
    assert int(limit.group(1)) == settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def test_a_client_address_gets_32_requests_at_once_and_the_next_is_refused_429(deployed):
    """A request counts once its header is read: each held one here is waiting for its body (100 Continue)."""
    _, proxy = deployed
    held = [tls_connection(proxy, "127.0.0.3") for _ in range(PER_CLIENT_LIMIT + 1)]
    try:
        for connection in held[:PER_CLIENT_LIMIT]:
            connection.sendall(waiting_body("/internal/commands"))
            assert connection.recv(65536).startswith(b"HTTP/1.1 100 Continue")
        assert answer_head(held[-1], waiting_body("/internal/commands")).startswith(b"HTTP/1.1 429 ")
        with https(proxy) as other_client:
            assert other_client.get("/healthz").status_code == 200
    finally:
        for connection in held:
            connection.close()


def answer_head(connection: socket.socket, request: bytes) -> bytes:
    """Send ``request`` and read the answer's status line and header (nginx may linger before it closes)."""
    connection.sendall(request)
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = connection.recv(65536)
        assert chunk, answer
        answer += chunk
    return answer


def waiting_body(path: str) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            "Expect: 100-continue\r\n\r\n").encode()


def tls_connection(proxy: Nginx, source: str) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(proxy.certificate))
    plain = socket.create_connection(("127.0.0.1", proxy.https_port), timeout=GUARD_S, source_address=(source, 0))
    return context.wrap_socket(plain, server_hostname="127.0.0.1")


class SlowLoris:
    """``SLOW_CLIENTS`` TLS connections from 127.0.0.2, each sending one header line a second, never the end."""

    def __init__(self, proxy: Nginx) -> None:
        self.connections = [tls_connection(proxy, "127.0.0.2") for _ in range(SLOW_CLIENTS)]
        self.open = set(range(SLOW_CLIENTS))
        for connection in self.connections:
            connection.sendall(b"GET /slowloris HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            connection.setblocking(False)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._trickle, daemon=True)
        self.thread.start()

    def _trickle(self) -> None:
        while self.open and not self.stopped.wait(1.0):  # the attack's own pace
            for number in list(self.open):
                try:
                    if self.connections[number].recv(1) == b"":
                        self.open.discard(number)
                        continue
                except ssl.SSLWantReadError:
                    pass  # nothing from nginx yet: still held open
                except OSError:
                    self.open.discard(number)
                    continue
                try:
                    self.connections[number].send(b"X-Trickle: 1\r\n")
                except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
                    pass
                except OSError:
                    self.open.discard(number)

    def wait_until_all_cut_off(self) -> bool:
        deadline = time.monotonic() + GUARD_S
        while self.open and time.monotonic() < deadline:
            time.sleep(0.1)
        return not self.open

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(GUARD_S)
        for connection in self.connections:
            connection.close()


def test_a_slowloris_crowd_neither_slows_healthz_nor_outlasts_the_header_timeout(deployed):
    console, proxy = deployed
    before = len(request_lines(console))
    crowd = SlowLoris(proxy)
    try:
        with https(proxy) as client:
            probes = [probe_health(client, crowd) for _ in range(5)]
        assert all(status == 200 and took_s < HEALTH_BOUND_S for status, took_s, _, _ in probes), probes
        assert min(still_open for _, _, still_open, _ in probes) > CONNECTION_LIMIT, probes  # more than waitress holds
        assert crowd.wait_until_all_cut_off(), f"{len(crowd.open)} slow connections still open"
    finally:
        crowd.close()
    with https(proxy) as client:
        marker = client.get("/healthz").headers["x-request-id"]
    logged(console, marker)
    assert [line["request_id"] for line in request_lines(console)[before:]] == [
        request_id for _, _, _, request_id in probes] + [marker]  # none of the crowd's reached the console


def probe_health(client: httpx.Client, crowd: SlowLoris) -> tuple[int, float, int, str]:
    """``/healthz``'s status, how long it took, how many slow connections were open then, and its request ID."""
    started_at = time.monotonic()
    health = client.get("/healthz", timeout=HEALTH_BOUND_S)
    return health.status_code, time.monotonic() - started_at, len(crowd.open), health.headers["x-request-id"]


@pytest.mark.parametrize("request_bytes", TWO_FRAMINGS.values(), ids=TWO_FRAMINGS.keys())
def test_a_smuggling_framing_is_refused_by_the_proxy_and_nothing_reaches_django(deployed, request_bytes):
    console, proxy = deployed
    before = len(request_lines(console))
    with tls_connection(proxy, "127.0.0.1") as connection:
        answer = answer_head(connection, request_bytes)
    assert re.match(rb"HTTP/1\.1 (400|501) ", answer), answer
    with https(proxy) as client:
        marker = client.get("/healthz").headers["x-request-id"]
    logged(console, marker)
    assert [line["request_id"] for line in request_lines(console)[before:]] == [marker]  # nothing before it
