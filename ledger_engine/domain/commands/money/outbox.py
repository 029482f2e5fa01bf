"""Effect records in the outbox: their statuses, claims and kinds.

The executor creates an effect as ``{"effect_id", "kind", "payload", "status":
"pending", "command_id", "created_sequence", "claim": None, "attempts": 0,
"result": None}``. After that only commands change it, through these moves:

    pending  -> claimed     ClaimEffect (attempts + 1)
    claimed  -> claimed     ClaimEffect by the holder before expiry (a renewal)
    claimed  -> pending     CompleteEffect "released": the worker did nothing
    claimed  -> done        CompleteEffect, or an observation that settles the work
    done     -> pending     reopened for a retry (a failed payment attempt, a failed anchor)
    pending | claimed -> cancelled   the obligation behind it went away

A claim ``{"worker_id", "claimed_at_ms", "expires_at_ms"}`` is live while the
admission time is before its expiry. Nothing happens when a claim expires:
there are no background mutations, so expiry only changes what the next
command may do.
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger_engine.domain.actors import actor_roles
from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.registry import RuleContext
from ledger_engine.domain.schema.money_payouts import Claim, Effect
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import OUTBOX
from ledger_engine.open_json import RecordData

PENDING, CLAIMED, DONE, CANCELLED = "pending", "claimed", "done", "cancelled"
OPEN = (PENDING, CLAIMED)


@dataclass(frozen=True, slots=True)
class EffectKind:
    name: str
    role: str  # the worker role that claims and completes it
    moves_money: bool  # a lapsed claim may hide a send: a fresh send needs reconciliation


PAYMENT_TRANSFER = EffectKind("payment.transfer", "dispatcher", moves_money=True)
BATCH_ANCHOR = EffectKind("batch.anchor", "committer", moves_money=False)
KINDS = {kind.name: kind for kind in (PAYMENT_TRANSFER, BATCH_ANCHOR)}


def require_worker_of(ctx: RuleContext, kind: EffectKind, what: str) -> None:
    """The acting actor works effects of ``kind``: an observer records only what its own kind of worker sent."""
    require(kind.role in actor_roles(ctx, ctx.actor_id), ErrorCode.CAPABILITY_MISSING,
            f"{what} is recorded by a worker that works {kind.name} effects (the {kind.role} role) as well as observes")


def load_effect(changes: Changes, effect_id: str) -> Effect:
    return load(changes, effect_id, f"effect {effect_id}", Effect, OUTBOX)


def claim_of(effect: Effect) -> Claim:
    """A claimed effect's claim: every move to ``claimed`` writes one, and every move away clears it."""
    claim = effect["claim"]
    assert claim is not None, f"effect {effect['effect_id']} is {effect['status']} without a claim"
    return claim


def claim_is_live(effect: Effect, now_ms: int) -> bool:
    return effect["status"] == CLAIMED and now_ms < claim_of(effect)["expires_at_ms"]


def require_live_claim(effect: Effect, worker_id: str, now_ms: int) -> None:
    """``worker_id`` holds an unexpired claim on ``effect``."""
    effect_id = effect["effect_id"]
    require(effect["status"] == CLAIMED, ErrorCode.INVALID_STATE, f"effect {effect_id} is {effect['status']}, not claimed")
    holder = claim_of(effect)["worker_id"]
    require(holder == worker_id, ErrorCode.CLAIM_HELD, f"effect {effect_id} is claimed by {holder}")
    require(claim_is_live(effect, now_ms), ErrorCode.CLAIM_EXPIRED,
            f"the claim of {holder} on effect {effect_id} expired at {claim_of(effect)['expires_at_ms']}")


def put_claim(changes: Changes, effect: Effect, claim: Claim, *, renewal: bool) -> None:
    attempts = effect["attempts"] + (0 if renewal else 1)
    changes.put_outbox(effect["effect_id"], {**effect, "status": CLAIMED, "claim": claim, "attempts": attempts})


def finish(changes: Changes, effect_id: str, result: RecordData) -> None:
    """Mark an open effect done; one already closed keeps its first result."""
    effect = load_effect(changes, effect_id)
    if effect["status"] in OPEN:
        changes.put_outbox(effect_id, {**effect, "status": DONE, "claim": None, "result": result})


def reopen(changes: Changes, effect_id: str, result: RecordData) -> None:
    """Make the effect claimable again, with the same payload: a retry, or a claim handed back."""
    effect = load_effect(changes, effect_id)
    changes.put_outbox(effect_id, {**effect, "status": PENDING, "claim": None, "result": result})


def cancel(changes: Changes, effect_id: str, reason: str) -> None:
    effect = load_effect(changes, effect_id)
    if effect["status"] in OPEN:
        changes.put_outbox(effect_id, {**effect, "status": CANCELLED, "claim": None, "result": {"cancelled": reason}})
