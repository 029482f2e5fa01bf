"""Actors and their capabilities, as the ledger itself records them."""

from __future__ import annotations

from ledger_engine.domain.changes import require
from ledger_engine.domain.registry import RuleContext
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE


def actor_key(actor_id: str) -> str:
    return key("actor", actor_id)


def actor_roles(ctx: RuleContext, actor_id: str) -> frozenset[str]:
    record = ctx.changes.get(STATE, actor_key(actor_id))
    if record is None or record.data["status"] != "active":
        return frozenset()
    return frozenset(record.data["roles"])


def require_role(ctx: RuleContext, allowed: frozenset[str]) -> None:
    """The acting actor must be active and hold one of ``allowed``."""
    record = ctx.changes.get(STATE, actor_key(ctx.actor_id))
    require(record is not None, ErrorCode.UNKNOWN_ACTOR, f"actor {ctx.actor_id} is not provisioned")
    roles = actor_roles(ctx, ctx.actor_id)
    require(
        roles & allowed,
        ErrorCode.CAPABILITY_MISSING,
        f"actor {ctx.actor_id} needs one of {sorted(allowed)}",
    )


def require_other_actor(ctx: RuleContext, other_actor_id: str, what: str) -> None:
    """Four eyes: the acting actor must not be the one who did ``what``."""
    require(
        ctx.actor_id != other_actor_id,
        ErrorCode.FOUR_EYES_REQUIRED,
        f"the actor who {what} cannot also approve it",
    )
