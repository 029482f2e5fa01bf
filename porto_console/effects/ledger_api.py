"""The workers' only way to the ledger: the console's internal API, with this worker's bearer credential.

Every command a worker sends has a command ID derived from what the command
means (``command_id_for``), so a retry after a crash or a lost response sends
the same request again and the ledger executes it at most once. A transport
failure is ``LedgerUnreachable``: the caller retries the same request later.
``submit_all`` sends many commands, and the evidence they cite, in one round
trip (``POST /internal/batch``), each answered as if sent alone.

Leases are reckoned on the ledger's clock, never this host's: every answer
names the time the console admits commands at (``X-Porto-Ledger-Time-Ms``),
and ``ledger_now_ms`` carries the last one forward on this host's monotonic
clock.
"""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import httpx

from ledger_engine.open_json import CommandResult, JsonObject, RecordData, Report, Unvalidated
from porto_console.effects.config import EffectsConfig, NotConfigured
from porto_console.effects.refusals import Refused

COMMAND_ID_DOMAIN = b"porto:london:effects:command:v1\n"
LEDGER_TIME_HEADER = "X-Porto-Ledger-Time-Ms"
BATCH_LIMIT = 100  # the internal API's most evidence items, and most commands, in one batch


class LedgerUnreachable(Exception):
    """No usable answer from the internal API (transport failure, 5xx, halted ledger): retry later."""


class DispatchDisabled(LedgerUnreachable):
    """Dispatch is disabled (paused, or a restored ledger not yet promoted): nothing is started meanwhile."""


class LedgerRefused(Refused):
    """The internal API refused the request before the ledger saw it (4xx): retrying will not help."""


@dataclass(frozen=True, slots=True)
class Outcome:
    command_id: str
    sequence: int
    outcome: str
    code: str
    result: CommandResult
    duplicate: bool

    @property
    def accepted(self) -> bool:
        return self.outcome == "accepted"


@dataclass(frozen=True, slots=True)
class Command:
    """One typed command as a worker sends it."""

    command_type: str
    payload: Unvalidated
    command_id: str
    expected_revisions: Sequence[Unvalidated] = field(default=())
    evidence_hashes: Sequence[str] = field(default=())

    def body(self) -> Unvalidated:
        return {"command_id": self.command_id, "command_type": self.command_type, "payload": self.payload,
                "expected_revisions": sorted(self.expected_revisions, key=lambda item: (item["cf"], item["key"])),
                "evidence_hashes": sorted(set(self.evidence_hashes))}


# What one command of a batch came to: its outcome, or the refusal or failure it alone would have met.
Answer = Outcome | LedgerRefused | LedgerUnreachable


def command_id_for(*parts: str) -> str:
    """A UUIDv4-shaped ID that names one intended command, the same on every retry."""
    digest = hashlib.sha256(COMMAND_ID_DOMAIN + "\n".join(parts).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


class LedgerApi:
    def __init__(self, base_url: str, token: str, *, timeout_secs: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout_secs, transport=transport,
                                  headers={"Authorization": f"Bearer {token}"})
        self._clock_lock = threading.Lock()
        self._ledger_ms_at: tuple[int, float] | None = None  # the ledger's time last read, and when (monotonic)

    @classmethod
    def from_config(cls, config: EffectsConfig) -> "LedgerApi":
        if not config.worker_token:
            raise NotConfigured("no worker credential: set PORTO_WORKER_TOKEN or PORTO_WORKER_TOKEN_FILE")
        return cls(config.internal_api_url, config.worker_token)

    @classmethod
    def observer_from_config(cls, config: EffectsConfig) -> "LedgerApi":
        """The payment worker's second credential, which records what the chain did with its payments."""
        _, token = config.require_observer()
        return cls(config.internal_api_url, token)

    def close(self) -> None:
        self._http.close()

    def submit(self, command_type: str, payload: Unvalidated, *, command_id: str,
               expected_revisions: Sequence[Unvalidated] = (), evidence_hashes: Sequence[str] = ()) -> Outcome:
        command = Command(command_type, payload, command_id, expected_revisions, evidence_hashes)
        return _outcome(self._call("POST", "/commands", json=command.body()))

    def submit_all(self, commands: Sequence[Command], evidence: Sequence[bytes] = ()) -> list[Answer]:
        """Store ``evidence`` and submit ``commands`` in as few round trips as the batch limit allows.

        All the evidence is stored before any command is submitted, so every command may cite any of it.
        """
        evidence = list(evidence)
        while len(evidence) > BATCH_LIMIT:
            self._call("POST", "/batch", json={"evidence": [item.hex() for item in evidence[:BATCH_LIMIT]]})
            evidence = evidence[BATCH_LIMIT:]
        answers: list[Answer] = []
        for start in range(0, max(len(commands), 1), BATCH_LIMIT):
            chunk = commands[start:start + BATCH_LIMIT]
            body = {"evidence": [item.hex() for item in evidence] if start == 0 else [],
                    "commands": [command.body() for command in chunk]}
            if not body["evidence"] and not body["commands"]:
                return answers
            answers += [_answer(result) for result in self._call("POST", "/batch", json=body)["results"]]
        return answers

    def ledger_now_ms(self) -> int:
        """The ledger's admission clock now, from its last answer; this host's clock before any answer."""
        with self._clock_lock:
            if self._ledger_ms_at is None:
                return time.time_ns() // 1_000_000
            ledger_ms, read_at = self._ledger_ms_at
        return ledger_ms + int((time.monotonic() - read_at) * 1000)

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

    def take_backup(self) -> Report:
        """Have the owner take a backup that counts if one is due; returns the newest good backup."""
        return self._call("POST", "/maintenance/backups")

    def head(self) -> Report:
        return self._call("GET", "/head")

    def journal_tree(self) -> Report:
        """``{"size", "root"}``: the journal's Merkle tree at the last durable commit, which commitments anchor."""
        return self._call("GET", "/journal-tree")

    def dispatch(self) -> Report:
        """``{"enabled", "reason"}``: workers start no effect while dispatch is disabled."""
        return self._call("GET", "/dispatch")

    def payment(self, payment_id: str) -> RecordData:
        """``{"sequence", "payment", "attempts"}``: the payment and every attempt recorded for it."""
        return self._call("GET", f"/payments/{payment_id}")

    def effect(self, effect_id: str) -> RecordData:
        """One outbox effect with its revision and claim, as ``effects`` lists it."""
        return self._call("GET", f"/effects/{effect_id}")

    def effects(self, status: str, kind: str | None = None) -> Iterator[RecordData]:
        """Every effect with ``status`` (and ``kind``), page by page."""
        params: JsonObject = {"status": status}
        if kind:
            params["kind"] = kind
        return self._pages("/effects", "effects", params)

    def in_flight_attempts(self) -> Iterator[RecordData]:
        """Every payment attempt whose outcome is pending or submitted, page by page."""
        return self._pages("/attempts", "attempts", {})

    def in_flight_batches(self) -> Iterator[RecordData]:
        """Every artifact batch whose anchor is submitted or uncertain, page by page."""
        return self._pages("/batches", "batches", {})

    def _pages(self, path: str, items: str, params: JsonObject) -> Iterator[RecordData]:
        params = {**params, "limit": 200}
        while True:
            page = self._call("GET", path, params=params)
            yield from page[items]
            if not page["next_cursor"]:
                return
            params["cursor"] = page["next_cursor"]

    def _call(self, method: str, path: str, **kwargs: Any) -> JsonObject:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as error:
            raise LedgerUnreachable(f"{method} {path}: {type(error).__name__}: {error}") from None
        self._note_ledger_time(response)
        if response.status_code == 200:
            return response.json()
        body = _error_body(response)
        if response.status_code >= 500:
            raise LedgerUnreachable(f"{method} {path}: {response.status_code} {body['code']}: {body['detail']}")
        raise LedgerRefused(body["code"], body["detail"])


    def _note_ledger_time(self, response: httpx.Response) -> None:
        stated = response.headers.get(LEDGER_TIME_HEADER, "")
        if stated.isdigit():
            with self._clock_lock:
                self._ledger_ms_at = (int(stated), time.monotonic())


def _answer(result: Report) -> Answer:
    if result["status"] == 200:
        return _outcome(result["outcome"])
    error = result["error"]
    if error["code"] == "DISPATCH_DISABLED":
        return DispatchDisabled(error["detail"])
    if result["status"] >= 500:
        return LedgerUnreachable(f"{result['status']} {error['code']}: {error['detail']}")
    return LedgerRefused(error["code"], error["detail"])


def _outcome(body: Report) -> Outcome:
    return Outcome(**{name: body[name] for name in Outcome.__slots__})


def _error_body(response: httpx.Response) -> dict[str, str]:
    try:
        body = response.json()
        return {"code": str(body["code"]), "detail": str(body["detail"])}
    except (ValueError, KeyError, TypeError):
        return {"code": f"HTTP_{response.status_code}", "detail": response.text[:200]}
