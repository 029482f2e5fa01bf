"""Demo stage 2: billing, nodes, sessions, grants, receipts, peer fills, holds, day close.

Every listener gets a period covering the demo days (``<listener>-period``).
Five nodes belong to three operator accounts: ``demo-node-00`` to ``-02`` serve
listeners, ``demo-node-03``'s operator declared listener 1 affiliated, and
``demo-node-04`` starts pending, is filled by peers, then activated. Keys are
real Ed25519 keys derived from fixture names, so every receipt verifies.

Day 0 opens with one scripted scenario per hold reason; each day has a
listening session whose last receipt arrives after the day closed (``late``);
every day then carries regular listening. Each morning ops decides the
previous day's holds and the coordinator closes every listener-day, except on
the last day: a few of its holds await review, and their listener-days stay
open. The scenario deliberately submits ``DELIBERATE_REJECTIONS``; everything
else is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger_engine.adapters.billing import KINDS
from ledger_engine.adapters.signatures import (
    BILLING_EVENT, KEY_ROTATION, NODE_ADMISSION, PEER_RESULT, RECEIPT, SignedDocument, key_from_seed,
    public_key_hex, sign,
)
from ledger_engine.canonical import sha256_hex
from ledger_engine.demo.builder import DAY_MS, DemoBuilder, fixture_address, fixture_digest
from ledger_engine.demo.foundation import ADMIN, DISPLAY_NAMES, INGEST, Cast
from ledger_engine.domain.schema.streaming import hold_key, listener_activity_key, node_key, work_key
from ledger_engine.domain.commands.streaming.nodes import KeyWindow, key_in_force
from ledger_engine.layout import STATE
from ledger_engine.open_json import Unvalidated

COORDINATOR = "demo-coordinator"
OPS = "demo-ops-1"
PROVIDER = "demo-pay"
OPERATORS = ("demo-operator-00", "demo-operator-01", "demo-operator-02")
# node -> operator; node 03 serves only the account its operator declared affiliated.
NODES = {"demo-node-00": OPERATORS[0], "demo-node-01": OPERATORS[0], "demo-node-02": OPERATORS[1],
         "demo-node-03": OPERATORS[2], "demo-node-04": OPERATORS[1]}
SELF_SERVING_NODE, BOOTSTRAPPED_NODE, COMPROMISED_NODE, SUSPENDED_NODE = (
    "demo-node-03", "demo-node-04", "demo-node-01", "demo-node-02")
# As the foundation stage lays renditions out.
CHUNK_MS, CHUNK_BYTES = 10_000, 160_000

HOUR_MS = 3_600_000
LEASE_MS = 15 * 60_000
GRANT_TTL_MS = 120_000
HEALTH_REFRESH_MS = 5 * 60_000
# Regular listening is capped so a day's envelopes fit in the day (the builder admits one a second).
LISTENING_LISTENERS_PER_DAY = 1_000

# Commands the scenario submits knowing the ledger refuses them: (command type, code).
DELIBERATE_REJECTIONS = (
    ("ApplyBillingObservation", "DUPLICATE_EVIDENCE"),  # a provider redelivers an event as a new command
    ("RecordReceipt", "CONFLICTING_EVIDENCE"),  # a node resends a receipt with other bytes
    ("OpenSession", "SESSION_ALREADY_ACTIVE"),  # a second device opens while a session is open
    ("CloseDay", "HOLDS_OPEN"),  # closing a listener-day before ops decided its holds
    ("IssueGrant", "NODE_NOT_ACTIVE"),  # routing to a node just suspended
)

# How ops decides a hold, by its first reason.
DECISIONS = {
    "key_rotated_out": ("reject", "insufficient_evidence"),
    "duration_beyond_rendition": ("release", "evidence_verified"),
    "overlapping_sessions": ("reject", "fraud_suspected"),
    "self_serving_node": ("reject", "policy_violation"),
    "served_outside_grant": ("release", "clock_skew_explained"),
    "late": ("release", "operator_explained"),
}


def period_id_of(listener_id: str) -> str:
    return f"{listener_id}-period"


def node_signing_key(node_id: str, version: int) -> Ed25519PrivateKey:
    return key_from_seed(f"fixture:node-key:{node_id}:{version}")


@dataclass
class Session:
    session_id: str
    listener_id: str
    day: int
    work: Unvalidated

    @property
    def rendition_id(self) -> str:
        rendition_id: str = self.work["rendition_id"]
        return rendition_id


@dataclass
class Grant:
    grant_id: str
    node_id: str
    chunk_index: int
    issued_at_ms: int
    session: Session | None = None
    consumed_at_ms: int | None = None

    @property
    def playback(self) -> Session:
        """The session a playback grant serves (a peer fill's grant serves none)."""
        assert self.session is not None, f"grant {self.grant_id} is a peer fill's"
        return self.session


@dataclass
class Hold:
    hold_id: str
    listener_id: str
    day: int
    reason: str
    awaiting_review: bool


@dataclass
class NodeView:
    """What the scenario knows of a node, to predict what the rules will accept."""

    node_id: str
    status: str = "pending"
    revision: int = 1
    key_versions: list[KeyWindow] = field(default_factory=list)
    observed_at_ms: int | None = None

    def add_key(self, valid_from_ms: int) -> None:
        self.key_versions.append({"version": len(self.key_versions) + 1, "valid_from_ms": valid_from_ms,
                                  "valid_until_ms": None})

    def version_at(self, timestamp_ms: int) -> int:
        in_force = key_in_force(self.key_versions, timestamp_ms)
        assert in_force is not None, f"{self.node_id} signs only with a key in force"
        return in_force["version"]


def build_streaming(builder: DemoBuilder, cast: Cast, *, days: int) -> None:
    if days >= 1 and cast.listeners:
        StreamingScenario(builder, cast, days).run()


class StreamingScenario:
    def __init__(self, builder: DemoBuilder, cast: Cast, days: int) -> None:
        self.builder = builder
        self.cast = cast
        self.days = days
        self.first_day = builder.clock_ms // DAY_MS
        self.nodes = {node_id: NodeView(node_id) for node_id in NODES}
        self.coordinator_sequence = 0
        self.activity_revisions: dict[tuple[str, int], int] = {}
        self.holds: list[Hold] = []
        self.late_receipts: dict[int, list[Grant]] = {}
        self.opening_events: dict[str, Unvalidated] = {}
        self.awaiting_review = False

    def listener(self, number: int) -> str:
        return self.cast.listeners[number % len(self.cast.listeners)]

    def run(self) -> None:
        self.operators()
        self.billing()
        self.admit_nodes()
        for offset in range(self.days):
            day = self.first_day + offset
            if offset:
                self.morning(day)
            self.builder.advance_to(day * DAY_MS + 8 * HOUR_MS)
            if offset == 0:
                self.scripted_holds()
            elif offset == self.days - 1:
                self.holds_awaiting_review()
            if offset == min(1, self.days - 1):
                self.activate_bootstrapped_node()
            if offset == self.days - 1:
                self.suspend_node()
            self.late_session(day)
            self.regular_listening(day)
            if offset == 0:
                self.rotate_scheduled("demo-node-00")
        self.morning(self.first_day + self.days)
        self.withdraw_work()
        self.cancel_entitlement()

    # Accounts, billing and nodes.
    def operators(self) -> None:
        for operator_id in OPERATORS:
            self.builder.add("RegisterAccount", {
                "account_id": operator_id, "kind": "operator", "roles": [],
                "identity_digest": fixture_digest("identity", operator_id),
                "payout_address": fixture_address(operator_id), "display_name": DISPLAY_NAMES[operator_id]},
                actor=ADMIN)

    def billing(self) -> None:
        start, end = self.first_day * DAY_MS, (self.first_day + self.days) * DAY_MS
        for number, listener_id in enumerate(self.cast.listeners):
            payload = self.billing_payload(listener_id, "period.opened", {
                "start_ms": start, "end_ms": end, "gross_gbp": "1199", "net_gbp": "999"})
            self.builder.add("ApplyBillingObservation", payload, actor=INGEST, evidence=[payload["evidence_digest"]])
            self.opening_events[listener_id] = payload
            if number % 10 != 9:  # every tenth listener's payment is still clearing
                cleared = self.billing_payload(listener_id, "payment.cleared")
                self.builder.add("ApplyBillingObservation", cleared, actor=INGEST,
                                 evidence=[cleared["evidence_digest"]])

    def billing_payload(self, listener_id: str, provider_type: str,
                        terms: Unvalidated | None = None) -> Unvalidated:
        """The normalised observation of a provider event, and the digest of that event as signed."""
        event_id = f"{listener_id}-{provider_type}"
        provider_event = {"id": event_id, "type": provider_type, "created_ms": self.builder.clock_ms,
                          "client_reference": listener_id,
                          "period": {"id": f"{listener_id}-pp", "start_ms": self.first_day * DAY_MS,
                                     "end_ms": (self.first_day + self.days) * DAY_MS}}
        if terms:
            provider_event["amounts"] = {"currency": "GBP", "gross": terms["gross_gbp"], "net": terms["net_gbp"]}
        signed = sign(key_from_seed(f"fixture:provider-key:{PROVIDER}"), BILLING_EVENT, provider_event)
        payload = {"provider": PROVIDER, "event_id": event_id, "kind": KINDS[provider_type],
                   "occurred_at_ms": self.builder.clock_ms, "provider_period_id": f"{listener_id}-pp",
                   "period_id": period_id_of(listener_id), "account_id": listener_id,
                   "evidence_digest": sha256_hex(signed.evidence_bytes())}
        return {**payload, "terms": terms} if terms else payload

    def admit_nodes(self) -> None:
        affiliated = {SELF_SERVING_NODE: [self.listener(1)]}
        for number, (node_id, operator_id) in enumerate(NODES.items()):
            application = {
                "node_id": node_id, "operator_id": operator_id, "endpoint": f"https://{node_id}.nodes.demo.example",
                "region": ("eu-west", "eu-central")[number % 2],
                "public_key": public_key_hex(node_signing_key(node_id, 1)),
                "independence": {"declaration_digest": fixture_digest(node_id, "independence"),
                                 "affiliated_account_ids": affiliated.get(node_id, [])}}
            signed = sign(node_signing_key(node_id, 1), NODE_ADMISSION, application)
            digest = sha256_hex(signed.evidence_bytes())
            envelope = self.builder.add("AdmitNode", {**application, "evidence_digest": digest}, actor=INGEST,
                                        evidence=[digest])
            self.nodes[node_id].add_key(envelope["admitted_at_ms"])
            if node_id != BOOTSTRAPPED_NODE:
                self.health(node_id)
                self.change_status(node_id, "active", "readiness_passed")

    def health(self, node_id: str, inventory: list[str] | None = None) -> None:
        node = self.nodes[node_id]
        node.observed_at_ms = self.builder.clock_ms
        if inventory is None:
            inventory = [] if node_id == BOOTSTRAPPED_NODE and node.status == "pending" else self.all_renditions()
        self.builder.add("RecordNodeHealth", {
            "node_id": node_id, "report_id": self.builder.new_id(), "observed_at_ms": node.observed_at_ms,
            "status": "healthy", "inventory": inventory}, actor=INGEST)

    def all_renditions(self) -> list[str]:
        return sorted(work["rendition_id"] for work in self.cast.works)

    def fresh_health(self, node_id: str) -> None:
        node = self.nodes[node_id]
        if node.observed_at_ms is None or self.builder.clock_ms - node.observed_at_ms >= HEALTH_REFRESH_MS:
            self.health(node_id)

    def change_status(self, node_id: str, status: str, reason: str) -> None:
        node = self.nodes[node_id]
        payload: Unvalidated = {"node_id": node_id, "status": status, "reason": reason}
        evidence = []
        if status == "active":
            digest = fixture_digest(node_id, "readiness", node.revision)
            payload["readiness"] = {"endpoint_verified": True, "inventory_verified": True,
                                    "independence_reviewed": True, "evidence_digest": digest}
            evidence = [digest]
        self.builder.add("ChangeNodeStatus", payload, actor=OPS, expected=[self.node_revision(node)],
                         evidence=evidence)
        node.status = status
        node.revision += 1

    def node_revision(self, node: NodeView) -> Unvalidated:
        return {"cf": STATE, "key": node_key(node.node_id), "revision": node.revision}

    def rotate(self, node_id: str, *, valid_from_ms: int, compromised_since_ms: int | None = None) -> None:
        node = self.nodes[node_id]
        current = node.key_versions[-1]
        request: Unvalidated = {"node_id": node_id, "version": current["version"] + 1,
                                   "public_key": public_key_hex(node_signing_key(node_id, current["version"] + 1)),
                                   "valid_from_ms": valid_from_ms}
        if compromised_since_ms is None:
            signed = sign(node_signing_key(node_id, current["version"]), KEY_ROTATION, request)
            payload = {**request, "reason": "scheduled", "evidence_digest": sha256_hex(signed.evidence_bytes())}
            actor = INGEST
        else:
            payload = {**request, "reason": "compromised", "compromised_since_ms": compromised_since_ms,
                       "evidence_digest": fixture_digest(node_id, "compromise-report")}
            actor = OPS
        self.builder.add("RotateNodeKey", payload, actor=actor, expected=[self.node_revision(node)],
                         evidence=[payload["evidence_digest"]])
        current["valid_until_ms"] = valid_from_ms if compromised_since_ms is None else compromised_since_ms
        node.add_key(valid_from_ms)
        node.revision += 1

    def rotate_scheduled(self, node_id: str) -> None:
        self.rotate(node_id, valid_from_ms=self.builder.clock_ms + 60_000)

    def serving_nodes(self) -> list[str]:
        """Nodes the coordinator routes listeners to now: active, keyed, not serving an affiliate."""
        return [node_id for node_id, node in self.nodes.items()
                if node.status == "active" and node_id != SELF_SERVING_NODE
                and node.key_versions[-1]["valid_from_ms"] <= self.builder.clock_ms]

    # Sessions, grants and receipts.
    def open_session(self, listener_id: str, work: Unvalidated) -> Session:
        session_id = self.builder.new_id()
        envelope = self.builder.add("OpenSession", {
            "session_id": session_id, "account_id": listener_id, "period_id": period_id_of(listener_id),
            "work_id": work["work_id"], "rendition_id": work["rendition_id"], "lease_ms": LEASE_MS},
            actor=COORDINATOR)
        session = Session(session_id, listener_id, envelope["admitted_at_ms"] // DAY_MS, work)
        self.touch_activity(listener_id, session.day)
        return session

    def close_session(self, session: Session, reason: str = "completed") -> None:
        self.builder.add("CloseSession", {"session_id": session.session_id, "reason": reason}, actor=COORDINATOR)
        self.touch_activity(session.listener_id, session.day)

    def touch_activity(self, listener_id: str, day: int) -> None:
        self.activity_revisions[(listener_id, day)] = self.activity_revisions.get((listener_id, day), 0) + 1

    def grant(self, node_id: str, chunk_index: int, *, session: Session | None = None,
              rendition_id: str | None = None, destination_node_id: str | None = None) -> Grant:
        self.fresh_health(node_id)
        self.coordinator_sequence += 1
        grant_id = self.builder.new_id()
        payload = {"grant_id": grant_id, "purpose": "playback" if session else "peer_fill", "node_id": node_id,
                   "rendition_id": session.rendition_id if session else rendition_id, "chunk_index": chunk_index,
                   "nonce_hash": fixture_digest("grant-nonce", grant_id),
                   "expires_at_ms": self.builder.clock_ms + GRANT_TTL_MS,
                   "coordinator_sequence": self.coordinator_sequence}
        payload |= {"session_id": session.session_id} if session else {"destination_node_id": destination_node_id}
        envelope = self.builder.add("IssueGrant", payload, actor=COORDINATOR)
        return Grant(grant_id, node_id, chunk_index, envelope["admitted_at_ms"], session)

    def consume(self, grant: Grant) -> Grant:
        envelope = self.builder.add("ConsumeGrant", {
            "grant_id": grant.grant_id, "request_id": f"{grant.node_id}-request-{self.builder.new_id()}",
            "nonce_hash": fixture_digest("grant-nonce", grant.grant_id)}, actor=COORDINATOR)
        grant.consumed_at_ms = envelope["admitted_at_ms"]
        return grant

    def signed_receipt(self, grant: Grant, *, served_at_ms: int | None = None, bytes_served: int = CHUNK_BYTES,
                       signed_version: int | None = None, receipt_id: str | None = None) -> SignedDocument:
        """What the serving node signs for ``grant``, by default with its key in force when it served."""
        served_at_ms = grant.consumed_at_ms if served_at_ms is None else served_at_ms
        assert served_at_ms is not None, "a node serves a grant once it is consumed"
        version = signed_version or self.nodes[grant.node_id].version_at(served_at_ms)
        body = {"receipt_id": receipt_id or self.builder.new_id(), "grant_id": grant.grant_id,
                "session_id": grant.playback.session_id, "node_id": grant.node_id, "key_version": version,
                "rendition_id": grant.playback.rendition_id, "chunk_index": grant.chunk_index,
                "bytes_served": bytes_served, "served_at_ms": served_at_ms}
        return sign(node_signing_key(grant.node_id, version), RECEIPT, body)

    def receipt(self, grant: Grant, *, held: str | None = None, **signing: Any) -> str:
        """Record the node's signed receipt for ``grant``; ``held`` names the hold reason the rules will find."""
        signed = self.signed_receipt(grant, **signing)
        body = orjson.loads(signed.body)
        digest = sha256_hex(signed.evidence_bytes())
        self.builder.add("RecordReceipt", {"receipt": body, "evidence_digest": digest}, actor=INGEST,
                         evidence=[digest])
        if held:
            self.holds.append(Hold(body["receipt_id"], grant.playback.listener_id, grant.playback.day, held,
                                   self.awaiting_review))
        receipt_id: str = body["receipt_id"]
        return receipt_id

    def serve(self, session: Session, node_id: str, chunk_index: int, **receipt_options: Any) -> Grant:
        grant = self.consume(self.grant(node_id, chunk_index, session=session))
        self.receipt(grant, **receipt_options)
        return grant

    def chunk_count(self, work: Unvalidated) -> int:
        duration_ms: int = work["duration_ms"]
        return -(-duration_ms // CHUNK_MS)

    def pick_work(self, number: int) -> Unvalidated:
        return self.cast.works[number % len(self.cast.works)]

    # Day 0: one scenario per hold reason, and the deliberate rejections that fit there.
    def scripted_holds(self) -> None:
        redelivered = self.opening_events[self.listener(0)]
        self.builder.add("ApplyBillingObservation", redelivered, actor=INGEST,
                         evidence=[redelivered["evidence_digest"]])  # DUPLICATE_EVIDENCE
        self.peer_fills()
        self.self_serving()
        self.beyond_rendition()
        self.overlapping_sessions()
        self.outside_grant()
        self.compromised_key()

    def holds_awaiting_review(self) -> None:
        """The last day's scenarios stay undecided, so the review queue has work; their days stay open."""
        self.awaiting_review = True
        self.self_serving(resend=False)
        self.beyond_rendition()
        self.outside_grant()
        self.awaiting_review = False

    def peer_fills(self) -> None:
        """The pending node's cache is filled from demo-node-00 before it serves anyone."""
        self.health(BOOTSTRAPPED_NODE)
        for number, work in enumerate(self.cast.works[:3]):
            for chunk_index in range(2):
                grant = self.consume(self.grant("demo-node-00", chunk_index, rendition_id=work["rendition_id"],
                                                destination_node_id=BOOTSTRAPPED_NODE))
                outcome = "hash_mismatch" if (number, chunk_index) == (2, 1) else "verified"
                body = {"result_id": self.builder.new_id(), "grant_id": grant.grant_id,
                        "source_node_id": "demo-node-00", "destination_node_id": BOOTSTRAPPED_NODE,
                        "key_version": 1, "rendition_id": work["rendition_id"], "chunk_index": chunk_index,
                        "outcome": outcome, "bytes_received": CHUNK_BYTES, "observed_at_ms": grant.consumed_at_ms}
                signed = sign(node_signing_key(BOOTSTRAPPED_NODE, 1), PEER_RESULT, body)
                digest = sha256_hex(signed.evidence_bytes())
                self.builder.add("RecordPeerResult", {"result": body, "evidence_digest": digest}, actor=INGEST,
                                 evidence=[digest])

    def self_serving(self, *, resend: bool = True) -> None:
        session = self.open_session(self.listener(1), self.pick_work(1))
        first = self.consume(self.grant(SELF_SERVING_NODE, 0, session=session))
        first_receipt = self.receipt(first, held="self_serving_node")
        for chunk_index in (1, 2):
            self.serve(session, SELF_SERVING_NODE, chunk_index, held="self_serving_node")
        if resend:
            self.receipt(first, bytes_served=CHUNK_BYTES - 1, receipt_id=first_receipt)  # CONFLICTING_EVIDENCE
        self.close_session(session)

    def beyond_rendition(self) -> None:
        work = self.pick_work(2)
        session = self.open_session(self.listener(2), work)
        for chunk_index in range(self.chunk_count(work)):
            self.serve(session, "demo-node-00", chunk_index)
        for chunk_index in (0, 1):
            self.serve(session, "demo-node-00", chunk_index, held="duration_beyond_rendition")
        self.close_session(session)

    def overlapping_sessions(self) -> None:
        listener_id = self.listener(3)
        first = self.open_session(listener_id, self.pick_work(3))
        prefetched = [self.grant("demo-node-00", chunk_index, session=first) for chunk_index in (3, 4)]
        for chunk_index in range(3):
            self.serve(first, "demo-node-00", chunk_index)
        self.builder.add("OpenSession", {  # SESSION_ALREADY_ACTIVE: a second device
            "session_id": self.builder.new_id(), "account_id": listener_id, "period_id": period_id_of(listener_id),
            "work_id": self.pick_work(4)["work_id"], "rendition_id": self.pick_work(4)["rendition_id"],
            "lease_ms": LEASE_MS}, actor=COORDINATOR)
        self.close_session(first, "stopped")
        second = self.open_session(listener_id, self.pick_work(4))
        for chunk_index in range(3):
            self.serve(second, "demo-node-00", chunk_index)
        for grant in prefetched:  # the first device keeps playing what it had fetched
            self.receipt(self.consume(grant), held="overlapping_sessions")
        self.close_session(second)

    def outside_grant(self) -> None:
        session = self.open_session(self.listener(4), self.pick_work(5))
        for chunk_index in range(5):
            grant = self.consume(self.grant(SUSPENDED_NODE, chunk_index, session=session))
            if chunk_index < 3:
                self.receipt(grant)
            else:  # the node's clock runs behind
                self.receipt(grant, served_at_ms=grant.issued_at_ms - 1, held="served_outside_grant")
        self.close_session(session)

    def compromised_key(self) -> None:
        session = self.open_session(self.listener(5), self.pick_work(6))
        grants = [self.consume(self.grant(COMPROMISED_NODE, chunk_index, session=session)) for chunk_index in range(4)]
        for grant in grants[:2]:
            self.receipt(grant)
        self.rotate(COMPROMISED_NODE, valid_from_ms=self.builder.clock_ms + 60_000,
                    compromised_since_ms=grants[2].consumed_at_ms)
        for grant in grants[2:]:  # verified before the compromise was recorded
            self.receipt(grant, signed_version=1, held="key_rotated_out")
        self.close_session(session)

    def late_session(self, day: int) -> None:
        """A session whose last receipt reaches the ledger only after its day closed."""
        node_id = self.serving_nodes()[0]
        session = self.open_session(self.listener(6), self.pick_work(7 + day))
        for chunk_index in range(3):
            self.serve(session, node_id, chunk_index)
        self.late_receipts[day] = [self.consume(self.grant(node_id, 3, session=session))]
        self.close_session(session)

    # Lifecycle moments.
    def activate_bootstrapped_node(self) -> None:
        if self.nodes[BOOTSTRAPPED_NODE].status == "pending":
            self.health(BOOTSTRAPPED_NODE, inventory=self.all_renditions())
            self.change_status(BOOTSTRAPPED_NODE, "active", "readiness_passed")

    def suspend_node(self) -> None:
        self.change_status(SUSPENDED_NODE, "suspended", "health_failure")
        session = self.open_session(self.listener(0), self.pick_work(8))
        self.grant(SUSPENDED_NODE, 0, session=session)  # NODE_NOT_ACTIVE
        for chunk_index in range(3):
            self.serve(session, self.serving_nodes()[0], chunk_index)
        self.close_session(session)

    def withdraw_work(self) -> None:
        work = self.cast.works[-1]
        digest = fixture_digest(work["work_id"], "withdrawal-notice")
        self.builder.add("DisableWork", {"work_id": work["work_id"], "reason": "rights_dispute",
                                         "evidence_digest": digest},
                         actor=INGEST, expected=[{"cf": STATE, "key": work_key(work["work_id"]), "revision": 2}],
                         evidence=[digest])

    def cancel_entitlement(self) -> None:
        listener_id = self.listener(7)
        payload = self.billing_payload(listener_id, "entitlement.cancelled")
        self.builder.add("ApplyBillingObservation", payload, actor=INGEST, evidence=[payload["evidence_digest"]])

    # Regular listening.
    def regular_listening(self, day: int) -> None:
        rng = self.builder.rng
        for listener_id in self.cast.listeners[:LISTENING_LISTENERS_PER_DAY]:
            for _ in range(1 + (rng.random() < 0.3)):
                work = rng.choice(self.cast.works)
                node_id = rng.choice(self.serving_nodes())
                chunks = 2 if rng.random() < 0.15 else rng.randint(3, min(9, self.chunk_count(work)))
                session = self.open_session(listener_id, work)
                for chunk_index in range(chunks):
                    partial = rng.random() < 0.05
                    self.serve(session, node_id, chunk_index,
                               bytes_served=CHUNK_BYTES // 2 if partial else CHUNK_BYTES)
                self.close_session(session)

    # Mornings: decide yesterday's holds, close yesterday's listener-days, then late evidence arrives.
    def morning(self, day: int) -> None:
        previous = day - 1
        self.builder.advance_to(day * DAY_MS + HOUR_MS)
        if previous == self.first_day:
            self.close_day(self.listener(1), previous)  # HOLDS_OPEN: its self-serving holds are undecided
        yesterday = [hold for hold in self.holds if hold.day == previous]
        for hold in yesterday:
            if hold.reason != "late" and not hold.awaiting_review:
                self.decide(hold)
        under_review = {hold.listener_id for hold in yesterday if hold.awaiting_review}
        for listener_id in self.cast.listeners:
            if listener_id not in under_review:
                self.close_day(listener_id, previous)
        for grant in self.late_receipts.pop(previous, []):
            if grant.playback.listener_id in under_review:  # its day is still open, so it is merely delayed
                self.receipt(grant)
                continue
            self.receipt(grant, held="late")
            if previous == self.first_day:
                self.decide(self.holds[-1])

    def close_day(self, listener_id: str, day: int) -> None:
        activity_key = listener_activity_key(listener_id, day)
        self.builder.add("CloseDay", {"listener_id": listener_id, "day": day, "period_id": period_id_of(listener_id)},
                         actor=COORDINATOR, expected=[{"cf": STATE, "key": activity_key,
                                                       "revision": self.activity_revisions.get((listener_id, day))}])

    def decide(self, hold: Hold) -> None:
        decision, reason = DECISIONS[hold.reason]
        self.builder.add("DecideHold", {"hold_id": hold.hold_id, "decision": decision, "reason": reason},
                         actor=OPS, expected=[{"cf": STATE, "key": hold_key(hold.hold_id), "revision": 1}])
