"""A temporary ``sshd`` on a free loopback port, for SFTP backup repositories; nothing in ~/.ssh is read or written.

The server has a generated host key and trusts one generated client key for
the current user. It serves SFTP itself (``internal-sftp``): an external
``sftp-server`` is started through the user's login shell, and bash started by
sshd reads ``~/.bashrc`` even when not interactive, which on a developer's
machine can cost more than the transfer. ``sftp_command`` is what restic's ``sftp.command`` option
takes: an ``ssh`` with its own config, key and known-hosts file.
"""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
START_SECS = 20


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


class SshServer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.user = getpass.getuser()
        self.process: subprocess.Popen | None = None

    def start(self) -> "SshServer":
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        _keygen(self.root / "host_key")
        _keygen(self.root / "client_key")
        (self.root / "authorized_keys").write_text((self.root / "client_key.pub").read_text())
        (self.root / "known_hosts").write_text(
            f"[127.0.0.1]:{self.port} {(self.root / 'host_key.pub').read_text()}")
        (self.root / "sshd_config").write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.root / 'host_key'}",
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}", f"PidFile {self.root / 'sshd.pid'}",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
            "PermitRootLogin prohibit-password", "Subsystem sftp internal-sftp", "LogLevel ERROR", ""]))
        (self.root / "ssh_config").write_text("\n".join([
            "Host *", f"  Port {self.port}", f"  User {self.user}", f"  IdentityFile {self.root / 'client_key'}",
            "  IdentitiesOnly yes", f"  UserKnownHostsFile {self.root / 'known_hosts'}", "  StrictHostKeyChecking yes",
            "  BatchMode yes", "  ServerAliveInterval 5", ""]))
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation, when run as root
        log = open(self.root / "sshd.log", "ab")
        self.process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.root / "sshd_config")],
                                        stdout=log, stderr=subprocess.STDOUT)
        self._wait_until_serving()
        return self

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_SECS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.root / 'sshd.log').read_text()[-2000:]}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.1)
        raise RuntimeError("sshd did not start listening")

    def repository(self, path: Path) -> str:
        return f"sftp:{self.user}@127.0.0.1:{path}"

    @property
    def sftp_command(self) -> str:
        return f"ssh -F {self.root / 'ssh_config'} {self.user}@127.0.0.1 -s sftp"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
