"""UpdateRecipient: a new payout address, requested with ownership evidence and approved by someone else.

One command, three steps on one update record:

- ``request``: names the prospective version (the current one plus one), the
  new address and the digest of the ownership evidence. While it is pending
  nothing new is signed to the recipient: its approved and failed payments are
  held (``held_for`` names the update), so is a payment whose attempt fails
  meanwhile, and RecordSignedAttempt refuses the recipient outright.
- ``approve``: by a finance actor other than the requester, restating the
  version and address. Writes the new recipient version, and every unsigned
  payment to the recipient moves to it under a new prepared run that needs
  approval again (``readdress``): a prepared run containing one is
  invalidated and prepared again whole; an approved, held or failed payment is
  cancelled (its reservation released) and prepared again alone. Signed
  attempts and their payments are left exactly as they are (docs/spec/domain-model-and-state-machines.md §5);
  should such an attempt fail later, its payment moves the same way then.
- ``decline``: held payments return to where they were.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ledger_engine.domain.actors import require_other_actor
from ledger_engine.domain.changes import require
from ledger_engine.domain.commands.money import payments
from ledger_engine.domain.commands.money.payout_runs import end_run, load_run, readdress, run_payments
from ledger_engine.domain.commands.money.recipients import (
    approved_update_for, load_recipient, pending_update, require_no_pending_update,
)
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.invariants import require_conserved
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_payouts import Payment, RecipientUpdate, recipient_key, update_key
from ledger_engine.domain.types import ChainAddress, Count, Digest, Identifier
from ledger_engine.domain.view import with_fields
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

HOLDABLE = ("approved", "failed")
MOVED_REASON = "recipient_updated"


class RequestUpdate(Payload):
    action: Literal["request"]
    version: Count = Field(ge=2)
    payout_address: ChainAddress
    evidence_digest: Digest


class ApproveUpdate(Payload):
    action: Literal["approve"]
    version: Count = Field(ge=2)
    payout_address: ChainAddress


class DeclineUpdate(Payload):
    action: Literal["decline"]
    reason: Literal["evidence_insufficient", "requested_in_error", "superseded"]


class UpdateRecipientPayload(Payload):
    update_id: Identifier
    recipient_id: Identifier
    step: Annotated[RequestUpdate | ApproveUpdate | DeclineUpdate, Field(discriminator="action")]


@command("UpdateRecipient", payload=UpdateRecipientPayload, roles={"finance"}, cites_evidence=True,
         step_up=lambda p: isinstance(p.step, ApproveUpdate))
def update_recipient(ctx: RuleContext, p: UpdateRecipientPayload) -> CommandResult:
    if isinstance(p.step, RequestUpdate):
        return _request(ctx, p, p.step)
    update = _pending(ctx, p)
    if isinstance(p.step, ApproveUpdate):
        return _approve(ctx, update, p.step)
    return _decline(ctx, update, p.step)


def _request(ctx: RuleContext, p: UpdateRecipientPayload, step: RequestUpdate) -> CommandResult:
    changes = ctx.changes
    recipient = load_recipient(changes, p.recipient_id)
    require(step.evidence_digest in ctx.envelope.evidence_hashes, ErrorCode.INVALID_REFERENCE,
            "the ownership evidence digest must be listed in the envelope's evidence_hashes")
    require(step.version == recipient["version"] + 1, ErrorCode.STALE_REVISION,
            f"recipient {p.recipient_id} is at version {recipient['version']}; the next is {recipient['version'] + 1}")
    require(step.payout_address != recipient["payout_address"], ErrorCode.INVALID_STATE,
            f"recipient {p.recipient_id} already uses that address")
    # An update ID names the runs and payments an approval prepares again (payout_runs.successor_id), so it names
    # one update in the whole ledger, not one per recipient.
    changes.claim_unique(key("recipient_update", p.update_id), {"recipient_id": p.recipient_id},
                         ErrorCode.ALREADY_EXISTS, f"recipient update {p.update_id} already exists")
    require_no_pending_update(changes, p.recipient_id)
    held = [payment for payment in list(payments.payments_of_recipient(changes, p.recipient_id))
            if payment["state"] in HOLDABLE]
    for payment in held:
        payments.hold(changes, payment, p.update_id)
    changes.put_state(update_key(p.recipient_id, p.update_id), {
        "update_id": p.update_id,
        "recipient_id": p.recipient_id,
        "status": "pending",
        "from_version": recipient["version"],
        "version": step.version,
        "old_address": recipient["payout_address"],
        "payout_address": step.payout_address,
        "evidence_digest": step.evidence_digest,
        "requested_by": ctx.actor_id,
        "requested_at_ms": ctx.now_ms,
        "decision": None,
        "correlation_id": f"recipient_update:{p.update_id}",
        "created": created(ctx),
    })
    held_ids = [payment["payment_id"] for payment in held]
    changes.event("RecipientUpdateRequested", recipient_id=p.recipient_id, update_id=p.update_id,
                  version=step.version, held_payment_ids=held_ids)
    return {"update_id": p.update_id, "held_payment_ids": held_ids}


def _pending(ctx: RuleContext, p: UpdateRecipientPayload) -> RecipientUpdate:
    update = load(ctx.changes, update_key(p.recipient_id, p.update_id), f"recipient update {p.update_id}",
                  RecipientUpdate)
    require(update["status"] == "pending", ErrorCode.INVALID_STATE, f"recipient update {p.update_id} is {update['status']}")
    return update


def _approve(ctx: RuleContext, update: RecipientUpdate, step: ApproveUpdate) -> CommandResult:
    changes = ctx.changes
    require_other_actor(ctx, update["requested_by"], "requested this recipient update")
    require((step.version, step.payout_address) == (update["version"], update["payout_address"]),
            ErrorCode.INVALID_REFERENCE, f"recipient update {update['update_id']} requested another version or address")
    recipient_id = update["recipient_id"]
    changes.put_state(recipient_key(recipient_id), {"recipient_id": recipient_id,
                                                    "payout_address": update["payout_address"],
                                                    "version": update["version"]})
    decided = _decide(ctx, update, "approved")
    invalidated_runs, moved = _move_unsigned(ctx, recipient_id, decided)
    require_conserved(changes)
    changes.event("RecipientUpdated", recipient_id=recipient_id, update_id=update["update_id"],
                  version=update["version"], invalidated_run_ids=invalidated_runs,
                  cancelled_payment_ids=sorted(moved), prepared_run_ids=sorted(set(moved.values())))
    return {"recipient_id": recipient_id, "version": update["version"], "invalidated_run_ids": invalidated_runs,
            "cancelled_payment_ids": sorted(moved), "prepared_run_ids": sorted(set(moved.values()))}


def _move_unsigned(ctx: RuleContext, recipient_id: str, update: RecipientUpdate) -> tuple[list[str], dict[str, str]]:
    """Every unsigned payment to the recipient, prepared again at its new address; returns the runs invalidated
    and each moved payment's new run."""
    invalidated_runs, moved = [], {}
    for payment in list(payments.payments_of_recipient(ctx.changes, recipient_id)):
        if payment["state"] == "prepared":
            run = load_run(ctx.changes, payment["run_id"])
            planned = run_payments(ctx.changes, run)
            end_run(ctx, run, "invalidated", MOVED_REASON, planned)
            new_run = readdress(ctx, run, planned, update)
            invalidated_runs.append(run["run_id"])
            moved.update({other["payment_id"]: new_run for other in planned})
        elif payment["state"] in payments.RESERVED:
            moved[payment["payment_id"]] = move_to_current_address(ctx, payment, update)
    return invalidated_runs, moved


def move_to_current_address(ctx: RuleContext, payment: Payment, update: RecipientUpdate) -> str:
    """Cancel an unsigned, reserved payment and prepare it again at the address ``update`` approved."""
    cancelled = payments.cancel(ctx.changes, payment, MOVED_REASON)
    return readdress(ctx, load_run(ctx.changes, payment["run_id"]), [cancelled], update)


def place_unsigned(ctx: RuleContext, payment: Payment) -> None:
    """A payment became unsigned again (its attempt failed, or its hold ended): hold it while an update of its
    recipient is pending, or move it to the recipient's current address if that changed since it was frozen."""
    changes = ctx.changes
    pending = pending_update(changes, payment["recipient_id"])
    if pending is not None:
        if payment["state"] in HOLDABLE:
            payments.hold(changes, payment, pending["update_id"])
        return
    recipient = load_recipient(changes, payment["recipient_id"])
    if recipient["version"] != payment["recipient_version"] and payment["state"] in payments.RESERVED:
        move_to_current_address(ctx, payment, approved_update_for(changes, recipient["recipient_id"],
                                                                  recipient["version"]))


def _decline(ctx: RuleContext, update: RecipientUpdate, step: DeclineUpdate) -> CommandResult:
    changes = ctx.changes
    _decide(ctx, update, "declined", reason=step.reason)
    resumed = [payment for payment in list(payments.payments_of_recipient(changes, update["recipient_id"]))
               if payment["state"] == "held"]
    for payment in resumed:
        place_unsigned(ctx, payments.resume(changes, payment))
    resumed_ids = [payment["payment_id"] for payment in resumed]
    require_conserved(changes)
    changes.event("RecipientUpdateDeclined", recipient_id=update["recipient_id"], update_id=update["update_id"],
                  reason=step.reason, resumed_payment_ids=resumed_ids)
    return {"update_id": update["update_id"], "resumed_payment_ids": resumed_ids}


def _decide(ctx: RuleContext, update: RecipientUpdate, status: str, **details: Any) -> RecipientUpdate:
    decided = with_fields(update, status=status,
                          decision={"decided_by": ctx.actor_id, "decided_at_ms": ctx.now_ms, **details})
    ctx.changes.put_state(update_key(update["recipient_id"], update["update_id"]), decided)
    return decided
