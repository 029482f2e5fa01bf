"""Nodes: admission, status, key rotation and health.

A node belongs to one operator account for life. ``AdmitNode`` records it as
``pending``, which is enough for cache bootstrap (peer fills into it) but never
for serving listeners; only ``ChangeNodeStatus`` activates it, after readiness
checks and a fresh healthy health observation. Key versions cover half-open
intervals ``[valid_from_ms, valid_until_ms)`` that never overlap; a rotation
closes the previous version when the next begins, or earlier when the
previous key was compromised. Suspension, retirement and rotation leave a
``node_invalidation`` intent in the outbox so caches and routers drop the node
or key.
"""

from __future__ import annotations

import re
from typing import Literal, Sequence, TypedDict, TypeVar

from pydantic import Field, model_validator

from ledger_engine.canonical import MAX_SAFE_INTEGER
from ledger_engine.domain.changes import require, require_present
from ledger_engine.domain.schema.staff import Account, account_key
from ledger_engine.domain.commands.streaming.checks import (
    existing, require_absent, require_account, require_evidence, require_stated_revision,
)
from ledger_engine.domain.commands.streaming.fields import PublicKey, SortedIdentifiers
from ledger_engine.domain.schema.streaming import (
    HealthStatus, IndependenceDeclaration, KeyVersion, Node, NodeHealth, NodeStatus, NodeStatusReason, ReadinessChecks,
    endpoint_sentinel, node_health_key, node_key, node_public_key_sentinel,
)
from ledger_engine.domain.commands.streaming.policy import HEALTH_FRESH_MS
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Digest, Identifier, TimestampMs
from ledger_engine.domain.view import shaped
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

TRANSITIONS: dict[NodeStatus, tuple[NodeStatus, ...]] = {
    "pending": ("active", "retired"),
    "active": ("suspended", "retired"),
    "suspended": ("active", "retired"),
    "retired": (),
}

# https, a DNS name of two or more labels, an optional port, nothing else.
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_ENDPOINT = re.compile(rf"https://((?:{_LABEL}\.)+[a-z](?:[a-z0-9-]{{0,61}}[a-z0-9])?)(?::([1-9][0-9]{{0,4}}))?")
MAX_PORT = 65_535


class Independence(Payload):
    """The operator's declaration: which listener accounts it controls, so it is never paid for serving them."""

    declaration_digest: Digest
    affiliated_account_ids: SortedIdentifiers = Field(default=[], max_length=64)


class NodeApplication(Payload):
    """What an operator applies with, signed by the node's first key."""

    node_id: Identifier
    operator_id: Identifier
    endpoint: str = Field(max_length=300)
    region: Identifier
    public_key: PublicKey
    independence: Independence


class AdmitNodePayload(NodeApplication):
    evidence_digest: Digest


class Readiness(Payload):
    endpoint_verified: bool
    inventory_verified: bool
    independence_reviewed: bool
    evidence_digest: Digest


class ChangeNodeStatusPayload(Payload):
    node_id: Identifier
    status: Literal["active", "suspended", "retired"]
    reason: NodeStatusReason
    readiness: Readiness | None = None


class KeyRotationRequest(Payload):
    """A node's request for its next key version, signed by its current key."""

    node_id: Identifier
    version: int = Field(ge=2, le=MAX_SAFE_INTEGER)
    public_key: PublicKey
    valid_from_ms: TimestampMs


class RotateNodeKeyPayload(KeyRotationRequest):
    reason: Literal["scheduled", "compromised"]
    compromised_since_ms: TimestampMs | None = None
    evidence_digest: Digest

    @model_validator(mode="after")
    def _compromise_has_a_time(self) -> "RotateNodeKeyPayload":
        if (self.compromised_since_ms is not None) != (self.reason == "compromised"):
            raise ValueError("compromised_since_ms is given exactly when the previous key was compromised")
        return self


class HealthObservation(Payload):
    """A trusted probe's view of a node: its state and the renditions it holds."""

    node_id: Identifier
    observed_at_ms: TimestampMs
    status: HealthStatus
    inventory: SortedIdentifiers = Field(max_length=20_000)


class RecordNodeHealthPayload(HealthObservation):
    report_id: Identifier


def approved_endpoint(endpoint: str) -> str | None:
    """``host:port`` of an endpoint our policy approves, else ``None``."""
    match = _ENDPOINT.fullmatch(endpoint)
    if match is None or int(match.group(2) or 443) > MAX_PORT:
        return None
    return f"{match.group(1)}:{match.group(2) or 443}"


def key_version(node: Node, version: int) -> KeyVersion | None:
    return next((item for item in node["key_versions"] if item["version"] == version), None)


class KeyWindow(TypedDict):
    """When a key version is valid: from ``valid_from_ms``, until ``valid_until_ms`` (excluded) if it ended."""

    version: int
    valid_from_ms: int
    valid_until_ms: int | None


Window = TypeVar("Window", KeyVersion, KeyWindow)


def key_valid_at(entry: KeyVersion | KeyWindow, timestamp_ms: int) -> bool:
    until = entry["valid_until_ms"]
    return entry["valid_from_ms"] <= timestamp_ms and (until is None or timestamp_ms < until)


def key_in_force(key_versions: Sequence[Window], timestamp_ms: int) -> Window | None:
    """The key version of ``key_versions`` (a node's) valid at ``timestamp_ms``; versions never overlap, so there
    is at most one."""
    return next((entry for entry in key_versions if key_valid_at(entry, timestamp_ms)), None)


def require_routable(ctx: RuleContext, node_id: str, rendition_id: str) -> None:
    """The node may serve ``rendition_id`` now: active, freshly and healthily observed holding it, keyed."""
    node = existing(ctx, node_key(node_id), f"node {node_id}", Node)
    require(node["status"] == "active", ErrorCode.NODE_NOT_ACTIVE, f"node {node_id} is {node['status']}")
    health = require_fresh_health(ctx, node_id)
    require(rendition_id in health["inventory"], ErrorCode.INVALID_REFERENCE,
            f"node {node_id} did not report holding rendition {rendition_id}")
    require(key_in_force(node["key_versions"], ctx.now_ms) is not None, ErrorCode.KEY_NOT_VALID, f"node {node_id} has no key valid now")


def require_fresh_health(ctx: RuleContext, node_id: str) -> NodeHealth:
    unhealthy = f"node {node_id} has no healthy health observation"
    record = require_present(ctx.changes.get(STATE, node_health_key(node_id)), ErrorCode.NODE_NOT_ACTIVE, unhealthy)
    health = record.data_as(NodeHealth)
    require(health["status"] == "healthy", ErrorCode.NODE_NOT_ACTIVE, unhealthy)
    require(ctx.now_ms - health["observed_at_ms"] <= HEALTH_FRESH_MS, ErrorCode.EXPIRED,
            f"node {node_id} was last observed at {health['observed_at_ms']}, too long ago to route to")
    return health


@command("AdmitNode", payload=AdmitNodePayload, roles={"ingest", "ops"}, cites_evidence=True)
def admit_node(ctx: RuleContext, p: AdmitNodePayload) -> CommandResult:
    require_evidence(ctx, p.evidence_digest)
    require_absent(ctx, node_key(p.node_id), f"node {p.node_id}")
    require_account(ctx, p.operator_id, "operator")
    for account_id in p.independence.affiliated_account_ids:
        existing(ctx, account_key(account_id), f"affiliated account {account_id}", Account)
    host_and_port = require_present(approved_endpoint(p.endpoint), ErrorCode.INVALID_REFERENCE,
                                    f"endpoint {p.endpoint!r} is not approved: https and a DNS name, with no path")
    ctx.changes.claim_unique(endpoint_sentinel(host_and_port), {"node_id": p.node_id}, ErrorCode.ALREADY_EXISTS,
                             f"endpoint {host_and_port} already belongs to a node")
    _claim_public_key(ctx, p.public_key, p.node_id, 1)
    node: Node = {
        "node_id": p.node_id,
        "operator_id": p.operator_id,
        "status": "pending",
        "endpoint": f"https://{host_and_port}",
        "region": p.region,
        "key_versions": [{"version": 1, "public_key": p.public_key, "valid_from_ms": ctx.now_ms,
                          "valid_until_ms": None, "ended_by": None}],
        "independence": shaped(p.independence.model_dump(mode="json"), IndependenceDeclaration),
        "admitted_at_ms": ctx.now_ms,
        "status_changed_at_ms": ctx.now_ms,
        "status_reason": None,
        "readiness": None,
        "evidence_digest": p.evidence_digest,
    }
    ctx.changes.put_state(node_key(p.node_id), node)
    ctx.changes.event("NodeAdmitted", node_id=p.node_id, operator_id=p.operator_id, endpoint=node["endpoint"],
                      key_version=1)
    return {"node_id": p.node_id, "status": "pending"}


@command("ChangeNodeStatus", payload=ChangeNodeStatusPayload, roles={"ops"}, cites_evidence=True)
def change_node_status(ctx: RuleContext, p: ChangeNodeStatusPayload) -> CommandResult:
    require_stated_revision(ctx, node_key(p.node_id), "changing a node's status")
    node = existing(ctx, node_key(p.node_id), f"node {p.node_id}", Node)
    require(p.status in TRANSITIONS[node["status"]], ErrorCode.INVALID_STATE,
            f"node {p.node_id} cannot go from {node['status']} to {p.status}")
    readiness = None
    if p.status == "active":
        readiness = _require_ready(ctx, p, node)
    elif p.status == "retired":
        ctx.changes.release_unique(endpoint_sentinel(node["endpoint"].removeprefix("https://")))
    changed: Node = {
        **node,
        "status": p.status,
        "status_changed_at_ms": ctx.now_ms,
        "status_reason": p.reason,
        "readiness": readiness if readiness is not None else node["readiness"],
    }
    ctx.changes.put_state(node_key(p.node_id), changed)
    ctx.changes.event("NodeStatusChanged", node_id=p.node_id, previous=node["status"], status=p.status,
                      reason=p.reason)
    if p.status != "active":
        _invalidate(ctx, p.node_id, status=p.status, key_versions=[])
    return {"node_id": p.node_id, "status": p.status}


def _require_ready(ctx: RuleContext, p: ChangeNodeStatusPayload, node: Node) -> ReadinessChecks:
    readiness = require_present(p.readiness, ErrorCode.INVALID_STATE, "activating a node needs its readiness checks")
    for check in ("endpoint_verified", "inventory_verified", "independence_reviewed"):
        require(getattr(readiness, check), ErrorCode.INVALID_STATE, f"readiness check {check} has not passed")
    require_evidence(ctx, readiness.evidence_digest)
    require_fresh_health(ctx, p.node_id)
    require(key_in_force(node["key_versions"], ctx.now_ms) is not None, ErrorCode.KEY_NOT_VALID,
            f"node {p.node_id} has no key valid now")
    return shaped(readiness.model_dump(mode="json"), ReadinessChecks)


@command("RotateNodeKey", payload=RotateNodeKeyPayload, roles={"ingest", "ops"}, cites_evidence=True)
def rotate_node_key(ctx: RuleContext, p: RotateNodeKeyPayload) -> CommandResult:
    require_stated_revision(ctx, node_key(p.node_id), "rotating a node key")
    require_evidence(ctx, p.evidence_digest)
    node = existing(ctx, node_key(p.node_id), f"node {p.node_id}", Node)
    require(node["status"] != "retired", ErrorCode.INVALID_STATE, f"node {p.node_id} is retired")
    *earlier, current = node["key_versions"]
    require(p.version == current["version"] + 1, ErrorCode.INVALID_STATE,
            f"the next key version of node {p.node_id} is {current['version'] + 1}")
    require(p.valid_from_ms >= ctx.now_ms, ErrorCode.INVALID_TIME, "a new key cannot be valid before it is recorded")
    require(p.valid_from_ms > current["valid_from_ms"], ErrorCode.INVALID_TIME,
            "a new key version starts after the previous one")
    ends_at = p.valid_from_ms
    if p.compromised_since_ms is not None:
        require(current["valid_from_ms"] <= p.compromised_since_ms <= ctx.now_ms, ErrorCode.INVALID_TIME,
                "a key is compromised between its start and now")
        ends_at = p.compromised_since_ms
    _claim_public_key(ctx, p.public_key, p.node_id, p.version)
    ended: KeyVersion = {**current, "valid_until_ms": ends_at, "ended_by": p.reason}
    added: KeyVersion = {"version": p.version, "public_key": p.public_key, "valid_from_ms": p.valid_from_ms,
             "valid_until_ms": None, "ended_by": None}
    rotated: Node = {**node, "key_versions": [*earlier, ended, added]}
    ctx.changes.put_state(node_key(p.node_id), rotated)
    ctx.changes.event("NodeKeyRotated", node_id=p.node_id, version=p.version, valid_from_ms=p.valid_from_ms,
                      previous_valid_until_ms=ends_at, reason=p.reason, evidence_digest=p.evidence_digest)
    _invalidate(ctx, p.node_id, status=node["status"], key_versions=[current["version"]])
    return {"node_id": p.node_id, "version": p.version, "previous_valid_until_ms": ends_at}


@command("RecordNodeHealth", payload=RecordNodeHealthPayload, roles={"ingest"})
def record_node_health(ctx: RuleContext, p: RecordNodeHealthPayload) -> CommandResult:
    node = existing(ctx, node_key(p.node_id), f"node {p.node_id}", Node)
    require(node["status"] != "retired", ErrorCode.NODE_NOT_ACTIVE, f"node {p.node_id} is retired")
    require(p.observed_at_ms <= ctx.now_ms, ErrorCode.INVALID_TIME, "a health observation cannot be from the future")
    previous = ctx.changes.get(STATE, node_health_key(p.node_id))
    require(previous is None or p.observed_at_ms > previous.data["observed_at_ms"], ErrorCode.INVALID_TIME,
            f"node {p.node_id} already has a later health observation")
    health: NodeHealth = {
        "node_id": p.node_id,
        "report_id": p.report_id,
        "status": p.status,
        "observed_at_ms": p.observed_at_ms,
        "recorded_at_ms": ctx.now_ms,
        "inventory": list(p.inventory),
    }
    ctx.changes.put_state(node_health_key(p.node_id), health)
    ctx.changes.event("NodeHealthRecorded", node_id=p.node_id, report_id=p.report_id, status=p.status,
                      observed_at_ms=p.observed_at_ms, inventory_size=len(p.inventory))
    return {"node_id": p.node_id, "status": p.status}


def _claim_public_key(ctx: RuleContext, public_key: str, node_id: str, version: int) -> None:
    ctx.changes.claim_unique(node_public_key_sentinel(public_key), {"node_id": node_id, "version": version},
                             ErrorCode.ALREADY_EXISTS, "this public key is already registered")


def _invalidate(ctx: RuleContext, node_id: str, *, status: NodeStatus, key_versions: list[int]) -> None:
    """One intent per command, named after it: caches and routers drop the node or the keys."""
    ctx.changes.effect(f"node-invalidation.{ctx.command_id}", "node_invalidation",
                       {"node_id": node_id, "status": status, "key_versions": key_versions})
