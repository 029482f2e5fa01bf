"""PauseDispatch, RequestDispatchResume and DecideDispatchResume: whether workers may carry out effects.

The switch is ledger state (``state/dispatch_switch``), written only by these
commands, so the journal says who paused or resumed payments, when and why,
and replay and checkpoints carry it. No record means it was never paused.

Pausing is the safe direction: one staff member (``DISPATCH_PAUSERS``) pauses
alone, with a reason and a fresh step-up proof. Resuming sends money again,
so it takes two, as staff changes do: one requests it with a reason, another
admin approves it with step-up (the requester approving is
``FOUR_EYES_REQUIRED``) or declines it. At most one resume is pending,
held by the ``dispatch_resume_pending`` sentinel; a request expires after
``RESUME_TTL_MS`` and a later request replaces an expired one.

A restored ledger owes a reconciliation before it dispatches; that is a fact
about the copy, not about its history, so the owner keeps it outside the
journal and refuses a resume while it lasts (``application/owner.py``,
docs/adr/0091). Resuming never promotes the writer generation.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ledger_engine.domain.actors import ADMIN, DISPATCH_PAUSERS, require_other_actor
from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.dispatch_switch import (
    PENDING_RESUME_SENTINEL, SWITCH_KEY, DispatchResume, DispatchSwitch, resume_key,
)
from ledger_engine.domain.types import Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE, UNIQUE
from ledger_engine.open_json import CommandResult, RecordData

# A resume is judged against the situation it was asked in, which does not keep for long.
RESUME_TTL_MS = 86_400_000
# What a person types, shown on the dashboard: one printable line, never blank.
StatedReason = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^\S(?:[^\x00-\x1f\x7f]*\S)?$")]
DeclineReason = Literal["not_reconciled", "incident_open", "requested_in_error", "superseded"]


class PauseDispatchPayload(Payload):
    reason: StatedReason


class RequestDispatchResumePayload(Payload):
    resume_id: Identifier
    reason: StatedReason


class DecideDispatchResumePayload(Payload):
    resume_id: Identifier
    decision: Literal["approve", "decline"]
    reason: DeclineReason | None = None

    @model_validator(mode="after")
    def _reason_for_a_decline(self) -> "DecideDispatchResumePayload":
        if (self.decision == "decline") != (self.reason is not None):
            raise ValueError("a decline states a reason; an approval does not")
        return self


def switch(changes: Changes) -> DispatchSwitch | None:
    record = changes.get(STATE, SWITCH_KEY)
    return record.data_as(DispatchSwitch) if record is not None else None


def is_paused(changes: Changes) -> bool:
    current = switch(changes)
    return current is not None and current["status"] == "paused"


@command("PauseDispatch", payload=PauseDispatchPayload, roles=DISPATCH_PAUSERS, step_up=True)
def pause_dispatch(ctx: RuleContext, p: PauseDispatchPayload) -> CommandResult:
    require(not is_paused(ctx.changes), ErrorCode.INVALID_STATE, "dispatch is already paused")
    ctx.changes.put_state(SWITCH_KEY, {"status": "paused", "reason": p.reason, "changed_by": ctx.actor_id,
                                       "changed_at_ms": ctx.now_ms, "requested_by": None, "resume_id": None})
    ctx.changes.event("DispatchPaused", paused_by=ctx.actor_id, stated_reason=p.reason)
    return {"status": "paused", "paused_by": ctx.actor_id}


@command("RequestDispatchResume", payload=RequestDispatchResumePayload, roles=DISPATCH_PAUSERS)
def request_dispatch_resume(ctx: RuleContext, p: RequestDispatchResumePayload) -> CommandResult:
    changes = ctx.changes
    require(changes.get(STATE, resume_key(p.resume_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"dispatch resume {p.resume_id} already exists")
    require(is_paused(changes), ErrorCode.INVALID_STATE, "dispatch is not paused")
    _expire_stale_request(ctx)
    changes.claim_unique(PENDING_RESUME_SENTINEL, {"resume_id": p.resume_id}, ErrorCode.ALREADY_EXISTS,
                         "a dispatch resume is already pending; decide that one first")
    expires = ctx.now_ms + RESUME_TTL_MS
    changes.put_state(resume_key(p.resume_id), {
        "resume_id": p.resume_id, "reason": p.reason, "status": "pending", "requested_by": ctx.actor_id,
        "requested_at_ms": ctx.now_ms, "expires_at_ms": expires, "decision": None})
    changes.event("DispatchResumeRequested", resume_id=p.resume_id, requested_by=ctx.actor_id,
                  stated_reason=p.reason)
    return {"resume_id": p.resume_id, "expires_at_ms": expires}


@command("DecideDispatchResume", payload=DecideDispatchResumePayload, roles={ADMIN},
         step_up=lambda p: p.decision == "approve")
def decide_dispatch_resume(ctx: RuleContext, p: DecideDispatchResumePayload) -> CommandResult:
    changes = ctx.changes
    request = load(changes, resume_key(p.resume_id), f"dispatch resume {p.resume_id}", DispatchResume)
    require(request["status"] == "pending", ErrorCode.INVALID_STATE,
            f"dispatch resume {p.resume_id} is {request['status']}")
    require_other_actor(ctx, request["requested_by"], "requested this resume")
    if p.decision == "approve":
        require(ctx.now_ms <= request["expires_at_ms"], ErrorCode.EXPIRED,
                f"dispatch resume {p.resume_id} expired unanswered; request it again")
        changes.put_state(SWITCH_KEY, {"status": "running", "reason": request["reason"], "changed_by": ctx.actor_id,
                                       "changed_at_ms": ctx.now_ms, "requested_by": request["requested_by"],
                                       "resume_id": p.resume_id})
    status = "approved" if p.decision == "approve" else "declined"
    _close(ctx, request, status, {"decided_by": ctx.actor_id, "decided_at_ms": ctx.now_ms, "reason": p.reason})
    changes.event("DispatchResumed" if status == "approved" else "DispatchResumeDeclined",
                  resume_id=p.resume_id, requested_by=request["requested_by"], decided_by=ctx.actor_id,
                  reason=p.reason)
    return {"resume_id": p.resume_id, "status": status}


def pending_resume(changes: Changes) -> DispatchResume | None:
    sentinel = changes.get(UNIQUE, PENDING_RESUME_SENTINEL)
    if sentinel is None:
        return None
    return load(changes, resume_key(sentinel.data["resume_id"]), "the pending dispatch resume", DispatchResume)


def _expire_stale_request(ctx: RuleContext) -> None:
    """A pending request past its expiry no longer blocks a new one."""
    stale = pending_resume(ctx.changes)
    if stale is not None and ctx.now_ms > stale["expires_at_ms"]:
        _close(ctx, stale, "expired", None)
        ctx.changes.event("DispatchResumeExpired", resume_id=stale["resume_id"])


def _close(ctx: RuleContext, request: DispatchResume, status: str, decision: RecordData | None) -> None:
    ctx.changes.put_state(resume_key(request["resume_id"]), {**request, "status": status, "decision": decision})
    ctx.changes.release_unique(PENDING_RESUME_SENTINEL)
