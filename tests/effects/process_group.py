"""A test-owned server process in its own process group: alive, SIGKILLed or stopped, children and all."""

from __future__ import annotations

import os
import signal
import subprocess


class ServerProcess:
    process: subprocess.Popen | None = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: whatever it held in memory is gone."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
