"""ClaimEffect and CompleteEffect: exclusive, expiring leases on outbox effects, and their results.

Both name the effect's current outbox revision in ``expected_revisions``, so
two workers racing for one effect cannot both win. A claim lasts from the
admission time to an explicit ``expires_at_ms`` (at most ``MAX_LEASE_MS``
later); each effect kind is worked by one worker role.

- A live claim held by another worker: CLAIM_HELD.
- The holder claiming again before expiry renews its lease.
- An expired claim, or an effect handed back, may be taken by another worker,
  except where it may hide a send: a ``payment.transfer`` whose payment has an
  attempt in flight needs the chain observed first (RECONCILIATION_REQUIRED),
  however the last claim ended. The signer refuses to record an attempt under
  an expired claim (CLAIM_EXPIRED), so a lapsed claim never authorises a fresh
  transfer.

CompleteEffect is for the holder of a live claim (else CLAIM_HELD or
CLAIM_EXPIRED). ``released`` hands the effect back untouched (the worker did
nothing), so a transfer with an attempt in flight cannot be released: its
holder reports the broadcast (RECONCILIATION_REQUIRED). Other outcomes are the
kind's to interpret.
"""

from __future__ import annotations

from typing import Callable, Literal

from pydantic import model_validator

from ledger_engine.domain.actors import actor_roles
from ledger_engine.domain.changes import Changes, Rejected, require, require_present
from ledger_engine.domain.commands.money import outbox, payments
from ledger_engine.domain.commands.money.artifacts import complete_anchor
from ledger_engine.domain.commands.money.attempts import TransactionHash, complete_transfer
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_payouts import Claim, Effect
from ledger_engine.domain.types import Identifier, TimestampMs
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import OUTBOX
from ledger_engine.open_json import CommandResult

MAX_LEASE_MS = 60 * 60 * 1000
WORKER_ROLES = {kind.role for kind in outbox.KINDS.values()}
COMPLETIONS: dict[str, Callable[[RuleContext, Effect, str, str | None], CommandResult]] = {
    outbox.PAYMENT_TRANSFER.name: complete_transfer,
    outbox.BATCH_ANCHOR.name: complete_anchor,
}


class ClaimEffectPayload(Payload):
    effect_id: Identifier
    expires_at_ms: TimestampMs


class CompleteEffectPayload(Payload):
    effect_id: Identifier
    outcome: Literal["submitted", "unknown", "failed", "released"]
    transaction_hash: TransactionHash | None = None

    @model_validator(mode="after")
    def _hash_when_sent(self) -> "CompleteEffectPayload":
        if (self.transaction_hash is not None) != (self.outcome in ("submitted", "unknown")):
            raise ValueError("submitted and unknown outcomes name their transaction hash; the others do not")
        return self


@command("ClaimEffect", payload=ClaimEffectPayload, roles=WORKER_ROLES)
def claim_effect(ctx: RuleContext, p: ClaimEffectPayload) -> CommandResult:
    changes = ctx.changes
    effect, kind = _effect_for_worker(ctx, p.effect_id, "claiming")
    require(effect["status"] in outbox.OPEN, ErrorCode.INVALID_STATE, f"effect {p.effect_id} is {effect['status']}")
    require(ctx.now_ms < p.expires_at_ms <= ctx.now_ms + MAX_LEASE_MS, ErrorCode.INVALID_TIME,
            f"a claim expires after its admission and within {MAX_LEASE_MS} ms")
    renewal = outbox.claim_is_live(effect, ctx.now_ms)
    if renewal:
        holder = outbox.claim_of(effect)["worker_id"]
        require(holder == ctx.actor_id, ErrorCode.CLAIM_HELD, f"effect {p.effect_id} is claimed by {holder}")
    elif kind.moves_money:
        _require_nothing_in_flight(changes, effect)
    claim: Claim = {"worker_id": ctx.actor_id, "claimed_at_ms": ctx.now_ms, "expires_at_ms": p.expires_at_ms}
    outbox.put_claim(changes, effect, claim, renewal=renewal)
    changes.event("EffectClaimed", effect_id=p.effect_id, kind=kind.name, worker_id=ctx.actor_id,
                  expires_at_ms=p.expires_at_ms, renewal=renewal)
    return {"effect_id": p.effect_id, "expires_at_ms": p.expires_at_ms, "renewal": renewal}


def _effect_for_worker(ctx: RuleContext, effect_id: str, doing: str) -> tuple[Effect, outbox.EffectKind]:
    """The effect, named with its expected revision, and its kind, which the acting worker's role must work."""
    require(ctx.states_revision_of(OUTBOX, effect_id), ErrorCode.STALE_REVISION,
            f"{doing} an effect needs its expected outbox revision")
    effect = outbox.load_effect(ctx.changes, effect_id)
    kind = require_present(outbox.KINDS.get(effect["kind"]), ErrorCode.INVALID_STATE,
                           f"no worker role handles effects of kind {effect['kind']}")
    require(kind.role in actor_roles(ctx, ctx.actor_id), ErrorCode.CAPABILITY_MISSING,
            f"{kind.name} effects are worked by the {kind.role} role")
    return effect, kind


def _require_nothing_in_flight(changes: Changes, effect: Effect) -> None:
    """Taking a transfer no one holds: whoever held it last may have broadcast a recorded attempt."""
    payment = payments.load_payment(changes, effect["payload"]["payment_id"])
    if payment["state"] in payments.IN_FLIGHT:
        raise Rejected(ErrorCode.RECONCILIATION_REQUIRED,
                       f"payment {payment['payment_id']} is {payment['state']} and its last claim ended: "
                       "observe its attempt on chain before anyone works this effect again")


@command("CompleteEffect", payload=CompleteEffectPayload, roles=WORKER_ROLES, cites_evidence=True)
def complete_effect(ctx: RuleContext, p: CompleteEffectPayload) -> CommandResult:
    changes = ctx.changes
    effect, kind = _effect_for_worker(ctx, p.effect_id, "completing")
    outbox.require_live_claim(effect, ctx.actor_id, ctx.now_ms)
    if p.outcome == "released":
        if kind.moves_money:
            _require_nothing_in_flight(changes, effect)
        result = {"outcome": "released"}
        outbox.reopen(changes, p.effect_id, result)
    else:
        result = COMPLETIONS[kind.name](ctx, effect, p.outcome, p.transaction_hash)
    changes.event("EffectCompleted", effect_id=p.effect_id, kind=kind.name, worker_id=ctx.actor_id, **result)
    return {"effect_id": p.effect_id, **result}
