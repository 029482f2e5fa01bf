"""The SIMULATED chain as its own process, durable in a state file, so tests can SIGKILL it and start it again.

Like a real node it keeps what it committed and loses its mempool when killed, unless started with
``keep_mempool``; ``clock_offset_secs`` starts its clock that far from the wall clock.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.effects.process_group import ServerProcess
from tests.effects.redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
START_SECS = 20.0


class ChainProcess(ServerProcess):
    def __init__(self, directory: Path, chain_id: int, port: int | None = None, *, keep_mempool: bool = False,
                 clock_offset_secs: float = 0.0) -> None:
        self.directory = Path(directory)
        self.keep_mempool = keep_mempool
        self.clock_offset_secs = clock_offset_secs
        self.directory.mkdir(parents=True, exist_ok=True)
        self.chain_id = chain_id
        self.port = port or free_port()
        self.state_path = self.directory / "simulated-chain.json"
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "ChainProcess":
        log = open(self.directory / "chain.log", "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "porto_console.effects.simulated_server", "--port", str(self.port),
             "--chain-id", str(self.chain_id), "--state", str(self.state_path),
             "--clock-offset-secs", str(self.clock_offset_secs), *(["--keep-mempool"] if self.keep_mempool else [])],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_SECS
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (self.directory / "chain.log").read_text()[-2000:]
            try:
                if httpx.get(f"{self.url}/v1", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.05)
        raise AssertionError("the SIMULATED chain did not start")

    # The control surface, over HTTP.
    def control(self, path: str, **request: Any) -> dict[str, Any]:
        response = httpx.post(f"{self.url}/simulated/{path}", json=request, timeout=5)
        assert response.status_code == 200, response.text
        return response.json()

    def read(self, path: str, **params: str) -> dict[str, Any]:
        response = httpx.get(f"{self.url}/simulated/{path}", params=params, timeout=5)
        assert response.status_code == 200, response.text
        return response.json()

    def transfers(self) -> list[dict[str, Any]]:
        return self.read("transfers")["transfers"]

    def balance(self, asset: str, address: str) -> int:
        return int(self.read("balance", asset=asset, address=address)["balance"])
