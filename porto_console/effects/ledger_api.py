"""The workers' only way to the ledger: the console's internal API, with this worker's bearer credential.

Every command a worker sends has a command ID derived from what the command
means (``command_id_for``), so a retry after a crash or a lost response sends
the same request again and the ledger executes it at most once. A transport
failure is ``LedgerUnreachable``: the caller retries the same request later.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any, Iterator

import httpx

from porto_console.effects.config import EffectsConfig, NotConfigured
from porto_console.effects.refusals import Refused

COMMAND_ID_DOMAIN = b"porto:london:effects:command:v1\n"


class LedgerUnreachable(Exception):
    """No usable answer from the internal API (transport failure, 5xx, halted ledger): retry later."""


class LedgerRefused(Refused):
    """The internal API refused the request before the ledger saw it (4xx): retrying will not help."""


@dataclass(frozen=True, slots=True)
class Outcome:
    command_id: str
    sequence: int
    outcome: str
    code: str
    result: dict[str, Any]
    duplicate: bool

    @property
    def accepted(self) -> bool:
        return self.outcome == "accepted"


def command_id_for(*parts: str) -> str:
    """A UUIDv4-shaped ID that names one intended command, the same on every retry."""
    digest = hashlib.sha256(COMMAND_ID_DOMAIN + "\n".join(parts).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


class LedgerApi:
    def __init__(self, base_url: str, token: str, *, timeout_secs: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_secs, transport=transport,
                                  headers={"Authorization": f"Bearer {token}"})

    @classmethod
    def from_config(cls, config: EffectsConfig) -> "LedgerApi":
        if not config.worker_token:
            raise NotConfigured("no worker credential: set PORTO_WORKER_TOKEN or PORTO_WORKER_TOKEN_FILE")
        return cls(config.internal_api_url, config.worker_token)

    def close(self) -> None:
        self._http.close()

    def submit(self, command_type: str, payload: dict[str, Any], *, command_id: str,
               expected_revisions: list[dict[str, Any]] = (), evidence_hashes: list[str] = ()) -> Outcome:
        body = {"command_id": command_id, "command_type": command_type, "payload": payload,
                "expected_revisions": sorted(expected_revisions, key=lambda item: (item["cf"], item["key"])),
                "evidence_hashes": sorted(set(evidence_hashes))}
        return _outcome(self._call("POST", "/commands", json=body))

    def store_evidence(self, data: bytes) -> str:
        """Store evidence bytes with the ledger owner before a command cites them; returns their SHA-256."""
        return self._call("POST", "/evidence", content=data,
                          headers={"Content-Type": "application/octet-stream"})["sha256"]

    def resolve(self, command_id: str) -> Outcome | None:
        """This worker's journalled command, or None if the ledger has not journalled it."""
        try:
            return _outcome(self._call("GET", f"/commands/{command_id}"))
        except LedgerRefused as refused:
            if refused.code == "NOT_FOUND":
                return None
            raise

    def take_backup(self) -> dict[str, Any]:
        """Have the owner take a backup that counts if one is due; returns the newest good backup."""
        return self._call("POST", "/maintenance/backups")

    def head(self) -> dict[str, Any]:
        return self._call("GET", "/head")

    def journal_tree(self) -> dict[str, Any]:
        """``{"size", "root"}``: the journal's Merkle tree at the last durable commit, which commitments anchor."""
        return self._call("GET", "/journal-tree")

    def dispatch(self) -> dict[str, Any]:
        """``{"enabled", "reason"}``: workers start no effect while dispatch is disabled."""
        return self._call("GET", "/dispatch")

    def payment(self, payment_id: str) -> dict[str, Any]:
        """``{"sequence", "payment", "attempts"}``: the payment and every attempt recorded for it."""
        return self._call("GET", f"/payments/{payment_id}")

    def effect(self, effect_id: str) -> dict[str, Any]:
        """One outbox effect with its revision and claim, as ``effects`` lists it."""
        return self._call("GET", f"/effects/{effect_id}")

    def effects(self, status: str, kind: str | None = None) -> Iterator[dict[str, Any]]:
        """Every effect with ``status`` (and ``kind``), page by page."""
        params: dict[str, Any] = {"status": status}
        if kind:
            params["kind"] = kind
        return self._pages("/effects", "effects", params)

    def in_flight_attempts(self) -> Iterator[dict[str, Any]]:
        """Every payment attempt whose outcome is pending or submitted, page by page."""
        return self._pages("/attempts", "attempts", {})

    def in_flight_batches(self) -> Iterator[dict[str, Any]]:
        """Every artifact batch whose anchor is submitted or uncertain, page by page."""
        return self._pages("/batches", "batches", {})

    def _pages(self, path: str, items: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        params = {**params, "limit": 200}
        while True:
            page = self._call("GET", path, params=params)
            yield from page[items]
            if not page["next_cursor"]:
                return
            params["cursor"] = page["next_cursor"]

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise LedgerUnreachable(f"{method} {path}: {type(error).__name__}: {error}") from None
        if response.status_code == 200:
            return response.json()
        body = _error_body(response)
        if response.status_code >= 500:
            raise LedgerUnreachable(f"{method} {path}: {response.status_code} {body['code']}: {body['detail']}")
        raise LedgerRefused(body["code"], body["detail"])


def _outcome(body: dict[str, Any]) -> Outcome:
    return Outcome(**{name: body[name] for name in Outcome.__slots__})


def _error_body(response: httpx.Response) -> dict[str, str]:
    try:
        body = response.json()
        return {"code": str(body["code"]), "detail": str(body["detail"])}
    except (ValueError, KeyError, TypeError):
        return {"code": f"HTTP_{response.status_code}", "detail": response.text[:200]}
