"""RecordPeerResult: the receiving node's signed outcome of a peer fill.

A fill moves a chunk between nodes' caches. It is evidence about nodes, not
about listening: it never touches a session or a listener-day, so it never
enters royalty duration or the operator pool. The receiving node's key must
have been valid when it observed the fill; there is no hold, since no money
depends on it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ledger_engine.canonical import MAX_SAFE_INTEGER
from ledger_engine.domain.changes import require
from ledger_engine.domain.commands.streaming.checks import existing, new_evidence_hash
from ledger_engine.domain.commands.streaming.grants import attach_receipt, require_receiptable
from ledger_engine.domain.schema.streaming import Node, node_key, peer_fill_key
from ledger_engine.domain.commands.streaming.nodes import key_valid_at, key_version
from ledger_engine.domain.commands.streaming.receipts import claimed_chunk
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Count, Digest, Identifier, TimestampMs
from ledger_engine.errors import ErrorCode
from ledger_engine.open_json import CommandResult

FillOutcome = Literal["verified", "hash_mismatch", "incomplete"]


class NormalisedPeerResult(Payload):
    """The fields the receiving node signs, as the adapter parsed them."""

    result_id: Identifier
    grant_id: Identifier
    source_node_id: Identifier
    destination_node_id: Identifier
    key_version: int = Field(ge=1, le=MAX_SAFE_INTEGER)
    rendition_id: Identifier
    chunk_index: Count
    outcome: FillOutcome
    bytes_received: Count
    observed_at_ms: TimestampMs


class RecordPeerResultPayload(Payload):
    result: NormalisedPeerResult
    evidence_digest: Digest


@command("RecordPeerResult", payload=RecordPeerResultPayload, roles={"ingest"}, cites_evidence=True)
def record_peer_result(ctx: RuleContext, p: RecordPeerResultPayload) -> CommandResult:
    r = p.result
    body_hash = new_evidence_hash(ctx, peer_fill_key(r.result_id), r, p.evidence_digest, f"peer result {r.result_id}")
    grant = require_receiptable(ctx, r.grant_id, "peer_fill", node_id=r.source_node_id,
                                destination_node_id=r.destination_node_id, rendition_id=r.rendition_id,
                                chunk_index=r.chunk_index)
    require(r.observed_at_ms <= ctx.now_ms, ErrorCode.INVALID_TIME, "a fill cannot be observed in the future")
    destination = existing(ctx, node_key(r.destination_node_id), f"node {r.destination_node_id}", Node)
    key = key_version(destination, r.key_version)
    require(key is not None and key_valid_at(key, r.observed_at_ms), ErrorCode.KEY_NOT_VALID,
            f"key version {r.key_version} of node {r.destination_node_id} was not valid at {r.observed_at_ms}")
    _, chunk = claimed_chunk(ctx, r.rendition_id, r.chunk_index, r.bytes_received)
    require(r.outcome != "verified" or r.bytes_received == chunk["size_bytes"], ErrorCode.INVALID_REFERENCE,
            "a verified fill received the whole chunk")
    ctx.changes.put_state(peer_fill_key(r.result_id), {
        **r.model_dump(mode="json"),
        "body_hash": body_hash,
        "evidence_digest": p.evidence_digest,
        "recorded_at_ms": ctx.now_ms,
        "recorded_sequence": ctx.sequence,
    })
    attach_receipt(ctx, grant, r.result_id)
    ctx.changes.event("PeerFillRecorded", result_id=r.result_id, grant_id=r.grant_id,
                      source_node_id=r.source_node_id, destination_node_id=r.destination_node_id,
                      outcome=r.outcome, bytes_received=r.bytes_received)
    return {"result_id": r.result_id, "outcome": r.outcome}
