"""Holds: evidence the rules will not count until ops decides it, and DecideHold.

A receipt that trips one or more ``HoldReason`` checks is recorded with a hold
(its ``hold_id`` is the receipt ID). An open hold blocks ``CloseDay`` for that
listener-day, except a late hold, whose day is already closed and stays so.
``DecideHold`` releases or rejects the whole hold once, appending a decision
revision to the receipt.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from ledger_engine.domain.changes import require
from ledger_engine.domain.commands.streaming.checks import existing, require_stated_revision
from ledger_engine.domain.commands.streaming.decisions import record_decision
from ledger_engine.domain.schema.streaming import hold_key, receipt_key
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.streaming import Disposition, Hold, Receipt, Session
from ledger_engine.domain.types import Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.open_json import CommandResult


class HoldReason(StrEnum):
    """Why a receipt is held. The spellings are a public interface: never rename one."""

    # The receipt's key version was not valid at its served time: rotated out, or cut short by a compromise.
    KEY_ROTATED_OUT = "key_rotated_out"
    # With this receipt the session's receipted media time exceeds the rendition's duration.
    DURATION_BEYOND_RENDITION = "duration_beyond_rendition"
    # The receipt was served inside the window of another session of the same listener.
    OVERLAPPING_SESSIONS = "overlapping_sessions"
    # The node's operator is the listener, or declared the listener's account affiliated.
    SELF_SERVING_NODE = "self_serving_node"
    # The served time lies outside the grant's issue-to-expiry window.
    SERVED_OUTSIDE_GRANT = "served_outside_grant"
    # The receipt arrived after its listener-day was closed; the closed day never changes.
    LATE = "late"


DecisionReason = Literal[
    "evidence_verified", "clock_skew_explained", "operator_explained", "fraud_suspected", "policy_violation",
    "insufficient_evidence",
]

# The reasons that fit each decision: a release explains the evidence, a reject condemns it.
# A closed table; a reason outside its decision's row is refused with HOLD_REASON_MISMATCH.
REASONS_BY_DECISION: dict[str, tuple[str, ...]] = {
    "release": ("evidence_verified", "clock_skew_explained", "operator_explained"),
    "reject": ("fraud_suspected", "policy_violation", "insufficient_evidence"),
}


def reason_fits(decision: str, reason: str) -> bool:
    return reason in REASONS_BY_DECISION.get(decision, ())


class DecideHoldPayload(Payload):
    hold_id: Identifier
    decision: Literal["release", "reject"]
    reason: DecisionReason
    note_digest: Digest | None = None


def raise_hold(ctx: RuleContext, receipt: Receipt, session: Session, reasons: list[str]) -> str:
    """Hold ``receipt`` for ``reasons``; returns the hold ID."""
    hold_id = receipt["receipt_id"]
    ctx.changes.put_state(hold_key(hold_id), {
        "hold_id": hold_id,
        "target_kind": "receipt",
        "receipt_id": receipt["receipt_id"],
        "session_id": receipt["session_id"],
        "listener_id": session["account_id"],
        "day": session["day"],
        "node_id": receipt["node_id"],
        "reasons": reasons,
        "status": "open",
        "raised_at_ms": ctx.now_ms,
        "raised_sequence": ctx.sequence,
        "decision_revision": 1,
        "decision": None,
    })
    ctx.changes.event("HoldRaised", hold_id=hold_id, receipt_id=receipt["receipt_id"],
                      listener_id=session["account_id"], day=session["day"], reasons=reasons)
    return hold_id


@command("DecideHold", payload=DecideHoldPayload, roles={"ops"})
def decide_hold(ctx: RuleContext, p: DecideHoldPayload) -> CommandResult:
    require_stated_revision(ctx, hold_key(p.hold_id), "deciding a hold")
    require(reason_fits(p.decision, p.reason), ErrorCode.HOLD_REASON_MISMATCH,
            f"{p.reason} is not a reason to {p.decision} a hold; fitting: {', '.join(REASONS_BY_DECISION[p.decision])}")
    hold = existing(ctx, hold_key(p.hold_id), f"hold {p.hold_id}", Hold)
    require(hold["status"] == "open", ErrorCode.INVALID_STATE, f"hold {p.hold_id} is already {hold['status']}")
    receipt = existing(ctx, receipt_key(hold["receipt_id"]), f"receipt {hold['receipt_id']}", Receipt)
    status = "released" if p.decision == "release" else "rejected"
    disposition: Disposition = (("partial" if receipt["partial"] else "accepted") if p.decision == "release"
                                else "rejected")
    revision = hold["decision_revision"] + 1
    record_decision(ctx, receipt, revision=revision, disposition=disposition, reasons=hold["reasons"],
                    decision=p.decision, decision_reason=p.reason)
    ctx.changes.put_state(hold_key(p.hold_id), {
        **hold,
        "status": status,
        "decision_revision": revision,
        "decision": {"decision": p.decision, "reason": p.reason, "actor_id": ctx.actor_id,
                     "decided_at_ms": ctx.now_ms, "note_digest": p.note_digest},
    })
    ctx.changes.event("HoldDecided", hold_id=p.hold_id, decision=p.decision, reason=p.reason,
                      hold_reasons=hold["reasons"], listener_id=hold["listener_id"], day=hold["day"])
    return {"hold_id": p.hold_id, "status": status, "disposition": disposition}
