"""The shipped ``deploy/nginx/porto-console.conf``, run by Debian's nginx in a temporary directory.

The site file is used as shipped, with only its two ports, its certificate and key (self-signed, made here for
``console.porto.example`` and ``127.0.0.1``) and the console's port in its upstream substituted. Around it
is a main configuration with what Debian's stock ``/etc/nginx/nginx.conf`` sets (workers, connections per worker,
TLS defaults), its files redirected into the temporary directory; as root, its workers run as root, since
the directory is the test's own. nginx runs in the foreground and is stopped with the fixture.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NGINX = "/usr/sbin/nginx"
SITE = Path(__file__).resolve().parents[2] / "deploy" / "nginx" / "porto-console.conf"
SERVER_NAME = "console.porto.example"
START_GUARD_S = 30  # a guard against an nginx that never listens, not a speed requirement

MAIN = """{user}
worker_processes auto;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{
    worker_connections 768;
}}
http {{
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    ssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3;
    ssl_prefer_server_ciphers on;
    access_log {root}/access.log;
    client_body_temp_path {root}/temp/body;
    proxy_temp_path {root}/temp/proxy;
    fastcgi_temp_path {root}/temp/fastcgi;
    uwsgi_temp_path {root}/temp/uwsgi;
    scgi_temp_path {root}/temp/scgi;
    include {root}/sites-enabled/porto-console.conf;
}}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate and key for ``console.porto.example`` and ``127.0.0.1``, valid for a day."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, SERVER_NAME)])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([
                       x509.DNSName(SERVER_NAME), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .sign(key, hashes.SHA256()))
    chain, private = directory / "fullchain.pem", directory / "privkey.pem"
    chain.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    private.chmod(0o600)
    return chain, private


def site_under_test(*, https_port: int, http_port: int, upstream_port: int, certificate: Path, key: Path) -> str:
    """The shipped site file with its ports, certificate, upstream and access log substituted, and nothing else."""
    text = SITE.read_text()
    logged = f"access_log {certificate.parent.parent / 'access.log'} porto_console;"
    text = text.replace("access_log /var/log/nginx/porto-console.access.log porto_console;", logged)
    for shipped, substitute in {"listen 443 ssl default_server;": f"listen {https_port} ssl default_server;",
                                "listen 80 default_server;": f"listen {http_port} default_server;",
                                "/etc/porto/tls/fullchain.pem": str(certificate),
                                "/etc/porto/tls/privkey.pem": str(key),
                                "server 127.0.0.1:8000;": f"server 127.0.0.1:{upstream_port};"}.items():
        assert text.count(shipped) == 1, f"the shipped site file no longer has exactly one {shipped!r}"
        text = text.replace(shipped, substitute)
    return text


class Nginx:
    """The shipped site in front of ``upstream_port``; ``https_port`` and ``http_port`` are where it listens."""

    def __init__(self, root: Path, upstream_port: int) -> None:
        self.root = root
        self.upstream_port = upstream_port
        self.https_port, self.http_port = free_port(), free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> "Nginx":
        for directory in ("sites-enabled", "temp", "tls"):
            (self.root / directory).mkdir(parents=True, exist_ok=True)
        self.certificate, key = self_signed_certificate(self.root / "tls")
        (self.root / "sites-enabled" / "porto-console.conf").write_text(site_under_test(
            https_port=self.https_port, http_port=self.http_port, upstream_port=self.upstream_port,
            certificate=self.certificate, key=key))
        (self.root / "nginx.conf").write_text(MAIN.format(user="user root;" if os.geteuid() == 0 else "",
                                                          root=self.root))
        self.process = subprocess.Popen([NGINX, "-c", str(self.root / "nginx.conf"), "-p", str(self.root),
                                         "-e", str(self.root / "error.log"), "-g", "daemon off;"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait_until_listening()
        return self

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + START_GUARD_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited: {self.error_log()[-2000:]}")
            if all(_accepts(port) for port in (self.https_port, self.http_port)):
                return
            time.sleep(0.05)
        raise RuntimeError(f"nginx did not listen: {self.error_log()[-2000:]}")

    def access_log(self) -> str:
        path = self.root / "access.log"
        return path.read_text() if path.exists() else ""

    def error_log(self) -> str:
        path = self.root / "error.log"
        return path.read_text() if path.exists() else ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=START_GUARD_S)


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
