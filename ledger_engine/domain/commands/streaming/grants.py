"""IssueGrant and ConsumeGrant: permission for one node to deliver one chunk, used once.

A ``playback`` grant serves a chunk of the session's rendition to the
listener; a ``peer_fill`` grant copies a chunk from one node into another's
cache (a pending node may receive fills, to bootstrap). The grant carries only
the SHA-256 of its nonce; the nonce itself travels in the grant bytes and is
checked by the admission adapter. Each coordinator numbers its grants with a
strictly increasing sequence, and IssueGrant revalidates the selected node
against its latest recorded health at admission time.
"""

from __future__ import annotations

from typing import Literal, Mapping

from pydantic import Field, model_validator

from ledger_engine.canonical import MAX_SAFE_INTEGER
from ledger_engine.domain.changes import require
from ledger_engine.domain.commands.streaming.checks import existing, require_absent, require_not_before
from ledger_engine.domain.schema.streaming import (
    Node, Rendition, Work, coordinator_key, grant_key, node_key, nonce_sentinel, rendition_key, session_key, work_key,
)
from ledger_engine.domain.commands.streaming.nodes import require_routable
from ledger_engine.domain.commands.streaming.policy import MAX_GRANT_TTL_MS
from ledger_engine.domain.commands.streaming.sessions import require_open_session
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.streaming import Grant
from ledger_engine.domain.types import Count, Digest, Identifier, TimestampMs
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

GrantPurpose = Literal["playback", "peer_fill"]


class IssueGrantPayload(Payload):
    grant_id: Identifier
    purpose: GrantPurpose
    session_id: Identifier | None = None
    destination_node_id: Identifier | None = None
    node_id: Identifier
    rendition_id: Identifier
    chunk_index: Count
    nonce_hash: Digest
    expires_at_ms: TimestampMs
    coordinator_sequence: int = Field(ge=1, le=MAX_SAFE_INTEGER)

    @model_validator(mode="after")
    def _one_destination(self) -> "IssueGrantPayload":
        if (self.session_id is not None, self.destination_node_id is not None) != (
                self.purpose == "playback", self.purpose == "peer_fill"):
            raise ValueError("a playback grant names a session, a peer fill grant a destination node")
        return self


class ConsumeGrantPayload(Payload):
    grant_id: Identifier
    request_id: Identifier
    nonce_hash: Digest


@command("IssueGrant", payload=IssueGrantPayload, roles={"coordinator"})
def issue_grant(ctx: RuleContext, p: IssueGrantPayload) -> CommandResult:
    require_absent(ctx, grant_key(p.grant_id), f"grant {p.grant_id}")
    _advance_coordinator(ctx, p.coordinator_sequence)
    ctx.changes.claim_unique(nonce_sentinel(p.nonce_hash), {"grant_id": p.grant_id}, ErrorCode.NONCE_REUSED,
                             "this grant nonce was already issued")
    require(ctx.now_ms < p.expires_at_ms <= ctx.now_ms + MAX_GRANT_TTL_MS, ErrorCode.INVALID_TIME,
            f"a grant expires after it is issued and within {MAX_GRANT_TTL_MS} ms")
    rendition = existing(ctx, rendition_key(p.rendition_id), f"rendition {p.rendition_id}", Rendition)
    require(p.chunk_index < len(rendition["chunks"]), ErrorCode.INVALID_REFERENCE,
            f"rendition {p.rendition_id} has no chunk {p.chunk_index}")
    require_routable(ctx, p.node_id, p.rendition_id)
    if p.purpose == "playback":
        _renew_session(ctx, p)
    else:
        _check_fill_destination(ctx, p)
    ctx.changes.put_state(grant_key(p.grant_id), {
        "grant_id": p.grant_id,
        "purpose": p.purpose,
        "session_id": p.session_id,
        "destination_node_id": p.destination_node_id,
        "node_id": p.node_id,
        "rendition_id": p.rendition_id,
        "chunk_index": p.chunk_index,
        "nonce_hash": p.nonce_hash,
        "issued_at_ms": ctx.now_ms,
        "expires_at_ms": p.expires_at_ms,
        "coordinator_id": ctx.actor_id,
        "coordinator_sequence": p.coordinator_sequence,
        "state": "issued",
        "consumed": None,
        "receipt_id": None,
    })
    ctx.changes.event("GrantIssued", grant_id=p.grant_id, purpose=p.purpose, session_id=p.session_id,
                      destination_node_id=p.destination_node_id, node_id=p.node_id, chunk_index=p.chunk_index)
    return {"grant_id": p.grant_id, "expires_at_ms": p.expires_at_ms}


@command("ConsumeGrant", payload=ConsumeGrantPayload, roles={"coordinator"})
def consume_grant(ctx: RuleContext, p: ConsumeGrantPayload) -> CommandResult:
    grant = existing(ctx, grant_key(p.grant_id), f"grant {p.grant_id}", Grant)
    require(grant["state"] == "issued", ErrorCode.ALREADY_CONSUMED, f"grant {p.grant_id} was already consumed")
    require(p.nonce_hash == grant["nonce_hash"], ErrorCode.INVALID_REFERENCE,
            f"the nonce does not belong to grant {p.grant_id}")
    require(ctx.now_ms <= grant["expires_at_ms"], ErrorCode.EXPIRED, f"grant {p.grant_id} has expired")
    node = existing(ctx, node_key(grant["node_id"]), f"node {grant['node_id']}", Node)
    require(node["status"] == "active", ErrorCode.NODE_NOT_ACTIVE, f"node {grant['node_id']} is {node['status']}")
    consumed = {"request_id": p.request_id, "at_ms": ctx.now_ms, "sequence": ctx.sequence}
    ctx.changes.put_state(grant_key(p.grant_id), {**grant, "state": "consumed", "consumed": consumed})
    ctx.changes.event("GrantConsumed", grant_id=p.grant_id, node_id=grant["node_id"], request_id=p.request_id)
    return {"grant_id": p.grant_id, "consumed_sequence": ctx.sequence}


def _advance_coordinator(ctx: RuleContext, sequence: int) -> None:
    record = ctx.changes.get(STATE, coordinator_key(ctx.actor_id))
    last = record.data if record else {"last_sequence": 0, "last_issued_at_ms": 0}
    require(sequence > last["last_sequence"], ErrorCode.INVALID_STATE,
            f"coordinator {ctx.actor_id} sequence {sequence} does not follow {last['last_sequence']}")
    require_not_before(ctx, last["last_issued_at_ms"], f"coordinator {ctx.actor_id}")
    ctx.changes.put_state(coordinator_key(ctx.actor_id), {
        "coordinator_id": ctx.actor_id, "last_sequence": sequence, "last_issued_at_ms": ctx.now_ms,
    })


def _renew_session(ctx: RuleContext, p: IssueGrantPayload) -> None:
    assert p.session_id is not None, "a playback grant names its session (IssueGrantPayload)"
    session = require_open_session(ctx, p.session_id)
    require(ctx.now_ms < session["expires_at_ms"], ErrorCode.EXPIRED, f"session {p.session_id} lease has expired")
    require(p.rendition_id == session["rendition_id"], ErrorCode.INVALID_REFERENCE,
            f"session {p.session_id} plays rendition {session['rendition_id']}")
    work = existing(ctx, work_key(session["work_id"]), f"work {session['work_id']}", Work)
    require(work["status"] == "active", ErrorCode.INVALID_STATE, f"work {session['work_id']} is {work['status']}")
    ctx.changes.put_state(session_key(p.session_id), {
        **session,
        "expires_at_ms": max(session["expires_at_ms"], ctx.now_ms + session["lease_ms"]),
        "updated_at_ms": ctx.now_ms,
        "grant_count": session["grant_count"] + 1,
    })


def _check_fill_destination(ctx: RuleContext, p: IssueGrantPayload) -> None:
    assert p.destination_node_id is not None, "a peer fill grant names its destination (IssueGrantPayload)"
    require(p.destination_node_id != p.node_id, ErrorCode.INVALID_REFERENCE, "a node does not fill itself")
    destination = existing(ctx, node_key(p.destination_node_id), f"node {p.destination_node_id}", Node)
    require(destination["status"] in ("pending", "active"), ErrorCode.NODE_NOT_ACTIVE,
            f"node {p.destination_node_id} is {destination['status']}")


def require_receiptable(ctx: RuleContext, grant_id: str, purpose: GrantPurpose, **bound: object) -> Grant:
    """A consumed grant of ``purpose`` with no final receipt yet, matching every ``bound`` field."""
    grant = existing(ctx, grant_key(grant_id), f"grant {grant_id}", Grant)
    require(grant["purpose"] == purpose, ErrorCode.INVALID_REFERENCE, f"grant {grant_id} is a {grant['purpose']} grant")
    fields: Mapping[str, object] = grant  # ``bound`` names them
    for field, value in bound.items():
        require(fields[field] == value, ErrorCode.INVALID_REFERENCE, f"grant {grant_id} has another {field}")
    require(grant["state"] == "consumed", ErrorCode.INVALID_STATE, f"grant {grant_id} was not consumed")
    require(grant["receipt_id"] is None, ErrorCode.CONFLICTING_EVIDENCE,
            f"grant {grant_id} already has final receipt {grant['receipt_id']}")
    return grant


def attach_receipt(ctx: RuleContext, grant: Grant, receipt_id: str) -> None:
    ctx.changes.put_state(grant_key(grant["grant_id"]), {**grant, "receipt_id": receipt_id})
