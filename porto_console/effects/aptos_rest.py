"""A ChainClient for an Aptos node's REST API (``/v1``); the SIMULATED chain speaks the same subset.

The client refuses to mix the two up: configured for the simulated chain it
requires the ``X-Porto-Chain: SIMULATED`` label on every answer, configured
for a real node it refuses any answer that carries it.

Reads never go back in time. Every read answer must name the ledger version
it was read at (``X-Aptos-Ledger-Version``), and one read at a version below
one this client has already read (a replica behind the others of a load
balancer) is ``ChainUncertain``: so a lookup made after the ledger's clock
was read covers every block up to that clock. A lookup by hash counts only
when the answer names the hash asked for.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import httpx

from ledger_engine.open_json import Document, JsonObject
from porto_console.effects.chain import ChainTransaction, ChainUncertain, LedgerState, SubmitRefused
from porto_console.effects.simulated_chain import LABEL as SIMULATED

BCS_CONTENT_TYPE = "application/x.aptos.signed_transaction+bcs"
LEDGER_VERSION_HEADER = "X-Aptos-Ledger-Version"
MEMPOOL_IS_FULL = 507  # Aptos: the node's mempool (or the sender's share of it) takes no more

log = logging.getLogger("porto.effects.chain")


class ChainMisconfigured(Exception):
    """The node at the configured URL is not the kind of chain the configuration names."""


class AptosRestClient:
    def __init__(self, base_url: str, *, simulated: bool, timeout_secs: float = 10.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.simulated = simulated
        self.label = SIMULATED if simulated else f"aptos {base_url}"
        self._http = httpx.Client(base_url=base_url.rstrip("/") + "/v1", timeout=timeout_secs,
                                  transport=transport)
        self._read_version = 0  # the highest ledger version any read has answered at
        self._read_lock = threading.Lock()

    def close(self) -> None:
        self._http.close()

    def submit(self, signed_bytes: bytes) -> str:
        response = self._request("POST", "/transactions", content=signed_bytes,
                                 headers={"Content-Type": BCS_CONTENT_TYPE})
        if response.status_code in (200, 202):
            return response.json()["hash"]
        body = _json_or_empty(response)
        if 400 <= response.status_code < 500 or response.status_code == MEMPOOL_IS_FULL:
            raise SubmitRefused(body.get("vm_error_code") or body.get("error_code") or str(response.status_code),
                                body.get("message", response.text))
        raise ChainUncertain(f"{self.label}: submit answered {response.status_code}")

    def transaction(self, transaction_hash: str) -> ChainTransaction | None:
        response = self._read(f"/transactions/by_hash/{transaction_hash}")
        if response.status_code == 404:
            return None
        body = self._ok(response)
        if str(body.get("hash", "")).lower() != transaction_hash.lower():
            raise ChainUncertain(f"{self.label}: asked for {transaction_hash}, answered with {body.get('hash')}")
        return _transaction(body)

    def account_transactions(self, address: str, start: int, limit: int) -> list[ChainTransaction]:
        """The account's committed transactions from sequence ``start`` on, at most ``limit`` (an Aptos page)."""
        response = self._read(f"/accounts/{address}/transactions?start={start}&limit={limit}")
        if response.status_code == 404:
            return []
        if response.status_code >= 400:
            raise ChainUncertain(f"{self.label}: account transactions answered {response.status_code}")
        found = [_transaction(body) for body in response.json()]
        if [(item.committed, item.sequence_number) for item in found] != \
                [(True, sequence) for sequence in range(start, start + len(found))]:
            raise ChainUncertain(f"{self.label}: the account's transactions from {start} are not its committed "
                                 "ones in sequence order")
        return found

    def sequence_number(self, address: str) -> int:
        response = self._read(f"/accounts/{address}")
        if response.status_code == 404:
            return 0
        return int(self._ok(response)["sequence_number"])

    def ledger_state(self) -> LedgerState:
        info = self._ok(self._read(""))
        return LedgerState(int(info["ledger_version"]), int(info["ledger_timestamp"]))

    def _read(self, path: str) -> httpx.Response:
        """A GET answered at a ledger version no older than any this client has read."""
        response = self._request("GET", path)
        if response.status_code >= 500:
            return response  # _ok reports it
        version = response.headers.get(LEDGER_VERSION_HEADER, "")
        if not version.isdigit():
            raise ChainUncertain(f"{self.label}: GET {path} answered without the ledger version it was read at")
        with self._read_lock:
            if int(version) < self._read_version:
                raise ChainUncertain(f"{self.label}: GET {path} answered at ledger version {version}, behind "
                                     f"version {self._read_version} already read: a node that has not caught up")
            self._read_version = int(version)
        return response

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            log.info("%s: %s %s gave no answer: %s", self.label, method, path, error)
            raise ChainUncertain(f"{self.label}: {method} {path}: {type(error).__name__}: {error}") from None
        labelled = response.headers.get("X-Porto-Chain") == SIMULATED
        if labelled != self.simulated:
            raise ChainMisconfigured(
                f"{self.label}: the node {'is' if labelled else 'is not'} the SIMULATED chain")
        return response

    def _ok(self, response: httpx.Response) -> Document:
        if response.status_code >= 400:
            raise ChainUncertain(f"{self.label}: {response.request.url.path} answered {response.status_code}")
        return response.json()


def _transaction(body: Document) -> ChainTransaction:
    sequence = str(body.get("sequence_number"))
    stated: JsonObject = {"sender": body.get("sender"), "payload": body.get("payload"),
                              "sequence_number": int(sequence) if sequence.isdigit() else None}
    if body["type"] == "pending_transaction":
        return ChainTransaction(body["hash"], False, False, "pending", None, None, **stated)
    return ChainTransaction(body["hash"], True, bool(body["success"]), body["vm_status"],
                            int(body["version"]), int(body["timestamp"]), **stated)


def _json_or_empty(response: httpx.Response) -> Document:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
