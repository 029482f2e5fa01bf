"""A small streaming world: actors, a listener with a period, a work, an active node, and helpers.

Time is explicit: ``World.now`` advances by a second per command unless a test
moves it, and starts at 08:00 UTC on ``DAY``.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ledger_engine.adapters.grants import nonce_hash
from ledger_engine.adapters.signatures import RECEIPT, key_from_seed, public_key_hex, sign
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.canonical import sha256_hex
from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.layout import STATE
from tests.support import payloads

DAY = 20_727  # 2026-10-01
HOUR_MS = 3_600_000
INGEST, COORDINATOR, OPS, ADMIN = "ingest-1", "coord-1", "ops-1", "genesis-admin"


def node_key_for(node_id: str, version: int = 1):
    return key_from_seed(f"test-node-key:{node_id}:{version}")


class World:
    def __init__(self, owner, envelopes) -> None:
        self.owner = owner
        self.envelopes = envelopes
        self.now = DAY * DAY_MS + 8 * HOUR_MS
        self._ids = itertools.count(1)
        self._coordinator_sequence = itertools.count(1)

    # Submitting.
    def submit(self, command_type: str, payload: dict[str, Any], *, actor: str, expected=(), evidence=(),
               at: int | None = None) -> CommandOutcome:
        self.now = at if at is not None else max(self.now + 1_000, self.owner.admission_floor_ms())
        envelope = self.envelopes(command_type, payload, actor=actor, expected=list(expected),
                                  evidence=list(evidence), admitted_at_ms=self.now)
        return self.owner.submit(envelope)

    def ok(self, command_type: str, payload: dict[str, Any], **options) -> dict[str, Any]:
        outcome = self.submit(command_type, payload, **options)
        assert outcome.accepted, (command_type, outcome.result)
        return outcome.result["data"]

    def rejected(self, code: str, command_type: str, payload: dict[str, Any], **options) -> None:
        """The command is journalled as a rejection with ``code`` and changes no state."""
        before = self.owner.at_boundary(_logical_rows)
        outcome = self.submit(command_type, payload, **options)
        assert (outcome.outcome, outcome.code) == ("rejected", code), outcome.result
        after = self.owner.at_boundary(_logical_rows)
        assert {k: v for k, v in after.items() if not k[0] == "command_result"} == \
               {k: v for k, v in before.items() if not k[0] == "command_result"}

    # Reading.
    def state(self, record_key: str) -> dict[str, Any] | None:
        record = self.owner.get(STATE, record_key)
        return record.data if record else None

    def revision(self, record_key: str) -> int | None:
        record = self.owner.get(STATE, record_key)
        return record.revision if record else None

    def stated(self, record_key: str) -> list[dict[str, Any]]:
        return [{"cf": STATE, "key": record_key, "revision": self.revision(record_key)}]

    def new_id(self, kind: str) -> str:
        return f"{kind}-{next(self._ids)}"

    # Accounts, catalogue, billing.
    def account(self, account_id: str, kind: str, roles: list[str] = (), **extra: Any) -> None:
        self.ok("RegisterAccount", {"account_id": account_id, "kind": kind, "roles": sorted(roles),
                                    "identity_digest": payloads.digest("identity", account_id), **extra},
                actor=ADMIN)

    def work(self, work_id: str, duration_ms: int = 30_000, recipient: str = "artist-1") -> str:
        rendition_id = f"{work_id}-aac"
        self.ok("ImportCatalogue", payloads.catalogue(f"import-{work_id}", payloads.work(
            work_id, payloads.rendition(rendition_id, duration_ms))), actor=INGEST)
        self.ok("ActivateWork", payloads.rights(work_id, {recipient: 10_000}), actor=INGEST)
        return rendition_id

    def billing(self, kind: str, *, period_id: str, account_id: str = "listener-1", event_id: str | None = None,
                provider_period_id: str | None = None, terms: dict | None = None, **options) -> CommandOutcome:
        evidence = payloads.digest("billing", event_id or kind, period_id)
        payload = {"provider": "test-pay", "event_id": event_id or self.new_id("evt"), "kind": kind,
                   "occurred_at_ms": self.now, "provider_period_id": provider_period_id or f"pp-{period_id}",
                   "period_id": period_id, "account_id": account_id, "evidence_digest": evidence}
        if terms is not None:
            payload["terms"] = terms
        return self.submit("ApplyBillingObservation", payload, actor=INGEST, evidence=[evidence], **options)

    def open_period(self, period_id: str, account_id: str = "listener-1", *, first_day: int = DAY, days: int = 30,
                    **options) -> CommandOutcome:
        terms = {"start_ms": first_day * DAY_MS, "end_ms": (first_day + days) * DAY_MS,
                 "gross_gbp": "1199", "net_gbp": "999"}
        return self.billing("period_opened", period_id=period_id, account_id=account_id, terms=terms, **options)

    # Nodes.
    def admission(self, node_id: str, operator_id: str = "operator-1", *, endpoint: str | None = None,
                  affiliated: list[str] = (), public_key: str | None = None) -> tuple[dict[str, Any], str]:
        evidence = payloads.digest("admission", node_id)
        payload = {"node_id": node_id, "operator_id": operator_id,
                   "endpoint": endpoint or f"https://{node_id}.nodes.example",
                   "region": "eu-west", "public_key": public_key or public_key_hex(node_key_for(node_id)),
                   "independence": {"declaration_digest": payloads.digest("independence", node_id),
                                    "affiliated_account_ids": list(affiliated)},
                   "evidence_digest": evidence}
        return payload, evidence

    def admit(self, node_id: str, operator_id: str = "operator-1", **options) -> None:
        payload, evidence = self.admission(node_id, operator_id, **options)
        self.ok("AdmitNode", payload, actor=INGEST, evidence=[evidence])

    def health(self, node_id: str, *, inventory: list[str] = ("work-1-aac",), status: str = "healthy",
               observed_at_ms: int | None = None) -> CommandOutcome:
        return self.submit("RecordNodeHealth", {
            "node_id": node_id, "report_id": self.new_id("report"), "status": status,
            "observed_at_ms": self.now if observed_at_ms is None else observed_at_ms,
            "inventory": sorted(inventory)}, actor=INGEST)

    def readiness(self, node_id: str, **checks: bool) -> tuple[dict[str, Any], str]:
        evidence = payloads.digest("readiness", node_id)
        return {"endpoint_verified": True, "inventory_verified": True, "independence_reviewed": True,
                "evidence_digest": evidence, **checks}, evidence

    def set_status(self, node_id: str, status: str, reason: str = "readiness_passed", **options) -> CommandOutcome:
        readiness, evidence = self.readiness(node_id)
        payload = {"node_id": node_id, "status": status, "reason": reason}
        if status == "active":
            payload["readiness"] = readiness
        return self.submit("ChangeNodeStatus", payload, actor=OPS, expected=self.stated(schema.node_key(node_id)),
                           evidence=[evidence] if status == "active" else [], **options)

    def active_node(self, node_id: str, operator_id: str = "operator-1", *, inventory: list[str] = ("work-1-aac",),
                    **options) -> None:
        self.admit(node_id, operator_id, **options)
        assert self.health(node_id, inventory=inventory).accepted
        assert self.set_status(node_id, "active").accepted

    # Sessions, grants, receipts.
    def open_session(self, account_id: str = "listener-1", *, work_id: str = "work-1", period_id: str = "period-1",
                     lease_ms: int = 600_000, session_id: str | None = None, **options) -> CommandOutcome:
        return self.submit("OpenSession", {
            "session_id": session_id or self.new_id("session"), "account_id": account_id, "period_id": period_id,
            "work_id": work_id, "rendition_id": f"{work_id}-aac", "lease_ms": lease_ms}, actor=COORDINATOR, **options)

    def session(self, account_id: str = "listener-1", **options) -> str:
        outcome = self.open_session(account_id, **options)
        assert outcome.accepted, outcome.result
        return outcome.result["data"]["session_id"]

    def grant_payload(self, *, node_id: str = "node-1", chunk_index: int = 0, session_id: str | None = None,
                      destination_node_id: str | None = None, rendition_id: str | None = None,
                      ttl_ms: int = 60_000, nonce: str | None = None) -> dict[str, Any]:
        grant_id = self.new_id("grant")
        if rendition_id is None:
            rendition_id = self.state(schema.session_key(session_id))["rendition_id"] if session_id else "work-1-aac"
        payload = {"grant_id": grant_id, "purpose": "playback" if session_id else "peer_fill", "node_id": node_id,
                   "rendition_id": rendition_id, "chunk_index": chunk_index,
                   "nonce_hash": nonce_hash((nonce or grant_id).encode()), "expires_at_ms": self.now + 1_000 + ttl_ms,
                   "coordinator_sequence": next(self._coordinator_sequence)}
        payload |= {"session_id": session_id} if session_id else {"destination_node_id": destination_node_id}
        return payload

    def grant(self, session_id: str | None = None, **options) -> str:
        return self.ok("IssueGrant", self.grant_payload(session_id=session_id, **options),
                       actor=COORDINATOR)["grant_id"]

    def consume(self, grant_id: str, **options) -> CommandOutcome:
        return self.submit("ConsumeGrant", {"grant_id": grant_id, "request_id": f"req-{grant_id}",
                                            "nonce_hash": nonce_hash(grant_id.encode())},
                           actor=COORDINATOR, **options)

    def receipt_body(self, grant_id: str, **overrides: Any) -> dict[str, Any]:
        grant = self.state(schema.grant_key(grant_id))
        return {"receipt_id": f"rcpt-{grant_id}", "grant_id": grant_id, "session_id": grant["session_id"],
                "node_id": grant["node_id"], "key_version": 1, "rendition_id": grant["rendition_id"],
                "chunk_index": grant["chunk_index"], "bytes_served": 160_000, "served_at_ms": self.now,
                **overrides}

    def receipt_payload(self, body: dict[str, Any], *, signer_version: int | None = None) -> tuple[dict, str]:
        """A RecordReceipt payload for ``body`` signed by the node's key, and its evidence digest."""
        signed = sign(node_key_for(body["node_id"], signer_version or body["key_version"]), RECEIPT, body)
        evidence = sha256_hex(signed.evidence_bytes())
        return {"receipt": body, "evidence_digest": evidence}, evidence

    def record_receipt(self, body: dict[str, Any], **options) -> CommandOutcome:
        payload, evidence = self.receipt_payload(body)
        return self.submit("RecordReceipt", payload, actor=INGEST, evidence=[evidence], **options)

    def receipt_rejected(self, code: str, body: dict[str, Any], *, signer_version: int | None = None) -> None:
        payload, evidence = self.receipt_payload(body, signer_version=signer_version)
        self.rejected(code, "RecordReceipt", payload, actor=INGEST, evidence=[evidence])

    def served(self, session_id: str, chunk_index: int, *, node_id: str = "node-1", **overrides: Any) -> dict:
        """Grant, consume and receipt one chunk; returns the receipt outcome's data."""
        grant_id = self.grant(session_id, node_id=node_id, chunk_index=chunk_index)
        assert self.consume(grant_id).accepted
        outcome = self.record_receipt(self.receipt_body(grant_id, **overrides))
        assert outcome.accepted, outcome.result
        return outcome.result["data"]

    def close_session(self, session_id: str, reason: str = "completed", **options) -> CommandOutcome:
        return self.submit("CloseSession", {"session_id": session_id, "reason": reason}, actor=COORDINATOR,
                           **options)

    def listen(self, account_id: str = "listener-1", chunks: int = 3, **options) -> str:
        """A whole session: open, every chunk served and receipted, closed."""
        session_id = self.session(account_id, **options)
        for index in range(chunks):
            self.served(session_id, index)
        assert self.close_session(session_id).accepted
        return session_id

    def close_day(self, listener_id: str = "listener-1", day: int = DAY, period_id: str = "period-1",
                  **options) -> CommandOutcome:
        return self.submit("CloseDay", {"listener_id": listener_id, "day": day, "period_id": period_id},
                           actor=COORDINATOR, expected=self.stated(schema.listener_activity_key(listener_id, day)),
                           **options)

    def decide(self, hold_id: str, decision: str = "release", reason: str = "evidence_verified") -> CommandOutcome:
        return self.submit("DecideHold", {"hold_id": hold_id, "decision": decision, "reason": reason}, actor=OPS,
                           expected=self.stated(schema.hold_key(hold_id)))

    def next_day(self) -> None:
        """Move to 01:00 UTC of the following day."""
        self.now = (self.now // DAY_MS + 1) * DAY_MS + HOUR_MS


def _logical_rows(store) -> dict[tuple[str, bytes], bytes]:
    from ledger_engine.storage.digest import logical_rows
    return {(family, key.encode()): value for family, key, value in logical_rows(store)}


@pytest.fixture
def bare_world(owner, envelopes) -> World:
    """Actors, accounts and a work; no period and no node yet."""
    world = World(owner, envelopes)
    world.account(INGEST, "worker", ["ingest"])
    world.account(COORDINATOR, "worker", ["coordinator"])
    world.account(OPS, "staff", ["ops"])
    world.account("artist-1", "artist", payout_address=payloads.address("artist-1"))
    world.account("listener-1", "listener")
    world.account("listener-2", "listener")
    world.account("operator-1", "operator", payout_address=payloads.address("operator-1"))
    world.account("operator-2", "operator", payout_address=payloads.address("operator-2"))
    world.work("work-1")
    return world


@pytest.fixture
def world(bare_world) -> World:
    """Listener-1 has period-1 (30 days from DAY), node-1 of operator-1 is active and holds work-1."""
    assert bare_world.open_period("period-1").accepted
    bare_world.active_node("node-1")
    return bare_world
