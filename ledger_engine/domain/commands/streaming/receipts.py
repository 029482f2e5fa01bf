"""RecordReceipt: a node's signed statement that it served one chunk under a consumed grant.

The admission adapter has verified the Ed25519 signature with the node's key
version valid at the served time and stored the signed bytes; the command
carries the normalised receipt and the digest of those bytes. Each consumed
grant gets one final receipt. The rule binds the receipt to its grant, session,
node key and chunk, then gives it its first decision: counted (``accepted``,
or ``partial`` when fewer bytes than the chunk arrived, which count for the
node but not for listening time), or held for every ``HoldReason`` it trips.
"""

from __future__ import annotations


from pydantic import Field

from ledger_engine.canonical import MAX_SAFE_INTEGER
from ledger_engine.domain.changes import require, require_present
from ledger_engine.domain.commands.streaming.checks import existing, new_evidence_hash
from ledger_engine.domain.commands.streaming.decisions import record_decision
from ledger_engine.domain.commands.streaming.grants import attach_receipt, require_receiptable
from ledger_engine.domain.commands.streaming.holds import HoldReason, raise_hold
from ledger_engine.domain.schema.streaming import (
    Disposition, Grant, KeyVersion, ListenerActivity, Node, Receipt, Rendition, RenditionChunk, Session,
    listener_activity_key, listener_day_key, node_key, receipt_key, rendition_key, session_key,
)
from ledger_engine.domain.commands.streaming.nodes import key_valid_at, key_version
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import Count, Digest, Identifier, TimestampMs
from ledger_engine.domain.view import shaped
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult


class NormalisedReceipt(Payload):
    """The fields a node signs, as the adapter parsed them."""

    receipt_id: Identifier
    grant_id: Identifier
    session_id: Identifier
    node_id: Identifier
    key_version: int = Field(ge=1, le=MAX_SAFE_INTEGER)
    rendition_id: Identifier
    chunk_index: Count
    bytes_served: Count = Field(gt=0)
    served_at_ms: TimestampMs


class RecordReceiptPayload(Payload):
    receipt: NormalisedReceipt
    evidence_digest: Digest


def claimed_chunk(ctx: RuleContext, rendition_id: str, index: int, size: int) -> tuple[Rendition, RenditionChunk]:
    """The rendition and chunk a receipt or fill names, refusing more bytes than the chunk has."""
    rendition = existing(ctx, rendition_key(rendition_id), f"rendition {rendition_id}", Rendition)
    chunk = rendition["chunks"][index]
    require(size <= chunk["size_bytes"], ErrorCode.INVALID_REFERENCE,
            f"chunk {index} of {rendition_id} has only {chunk['size_bytes']} bytes")
    return rendition, chunk


@command("RecordReceipt", payload=RecordReceiptPayload, roles={"ingest"}, cites_evidence=True)
def record_receipt(ctx: RuleContext, p: RecordReceiptPayload) -> CommandResult:
    r = p.receipt
    body_hash = new_evidence_hash(ctx, receipt_key(r.receipt_id), r, p.evidence_digest, f"receipt {r.receipt_id}")
    grant = require_receiptable(ctx, r.grant_id, "playback", session_id=r.session_id, node_id=r.node_id,
                                rendition_id=r.rendition_id, chunk_index=r.chunk_index)
    require(r.served_at_ms <= ctx.now_ms, ErrorCode.INVALID_TIME, "a receipt cannot be served in the future")
    node = existing(ctx, node_key(r.node_id), f"node {r.node_id}", Node)
    key = require_present(key_version(node, r.key_version), ErrorCode.KEY_NOT_VALID,
                          f"node {r.node_id} has no key version {r.key_version}")
    rendition, chunk = claimed_chunk(ctx, r.rendition_id, r.chunk_index, r.bytes_served)
    session = existing(ctx, session_key(r.session_id), f"session {r.session_id}", Session)

    partial = r.bytes_served < chunk["size_bytes"]
    media_ms = 0 if partial else chunk["end_ms"] - chunk["start_ms"]
    beyond_rendition = session["receipted_media_ms"] + media_ms > rendition["duration_ms"]
    reasons = _hold_reasons(ctx, r, grant, node, key, session, beyond_rendition)
    receipt = shaped({
        **r.model_dump(mode="json"),  # the receipt's own fields
        "body_hash": body_hash,
        "evidence_digest": p.evidence_digest,
        "listener_id": session["account_id"],
        "day": session["day"],
        "partial": partial,
        "media_ms": media_ms,
        "recorded_at_ms": ctx.now_ms,
        "recorded_sequence": ctx.sequence,
        "hold_id": None,
    }, Receipt)
    if reasons:
        receipt["hold_id"] = raise_hold(ctx, receipt, session, reasons)
    disposition = _first_disposition(reasons, partial)
    ctx.changes.put_state(receipt_key(r.receipt_id), receipt)
    attach_receipt(ctx, grant, r.receipt_id)
    receipted: Session = {
        **session,
        "receipt_ids": [*session["receipt_ids"], r.receipt_id],
        "receipted_media_ms": session["receipted_media_ms"] + media_ms,
    }
    ctx.changes.put_state(session_key(r.session_id), receipted)
    ctx.changes.event("ReceiptRecorded", receipt_id=r.receipt_id, grant_id=r.grant_id, session_id=r.session_id,
                      node_id=r.node_id, bytes_served=r.bytes_served, media_ms=media_ms,
                      evidence_digest=p.evidence_digest)
    record_decision(ctx, receipt, revision=1, disposition=disposition, reasons=reasons)
    return {"receipt_id": r.receipt_id, "disposition": disposition, "hold_reasons": reasons}


def _hold_reasons(ctx: RuleContext, r: NormalisedReceipt, grant: Grant, node: Node, key: KeyVersion,
                  session: Session, beyond_rendition: bool) -> list[str]:
    affiliated = [node["operator_id"], *node["independence"]["affiliated_account_ids"]]
    tripped = {
        HoldReason.KEY_ROTATED_OUT: not key_valid_at(key, r.served_at_ms),
        HoldReason.DURATION_BEYOND_RENDITION: beyond_rendition,
        HoldReason.OVERLAPPING_SESSIONS: _inside_another_session(ctx, session, r.served_at_ms),
        HoldReason.SELF_SERVING_NODE: session["account_id"] in affiliated,
        HoldReason.SERVED_OUTSIDE_GRANT: not grant["issued_at_ms"] <= r.served_at_ms <= grant["expires_at_ms"],
        HoldReason.LATE: ctx.changes.get(STATE, listener_day_key(session["account_id"], session["day"])) is not None,
    }
    return [str(reason) for reason in HoldReason if tripped[reason]]


def _inside_another_session(ctx: RuleContext, session: Session, served_at_ms: int) -> bool:
    record = ctx.changes.get(STATE, listener_activity_key(session["account_id"], session["day"]))
    assert record is not None, "opening a session writes its day's listener activity"
    activity = record.data_as(ListenerActivity)
    return any(
        window["session_id"] != session["session_id"] and window["opened_at_ms"] <= served_at_ms
        and (window["closed_at_ms"] is None or served_at_ms < window["closed_at_ms"])
        for window in activity["sessions"]
    )


def _first_disposition(reasons: list[str], partial: bool) -> Disposition:
    if HoldReason.LATE in reasons:
        return "late"
    if reasons:
        return "held"
    return "partial" if partial else "accepted"
