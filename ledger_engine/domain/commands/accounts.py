"""RegisterAccount: provision a domain or staff account and its roles.

Only an admin provisions. The core never sees the raw provider subject: the
admission adapter keeps that mapping in ``private_aux`` and hands the core a
digest, which is the account's identity sentinel.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from ledger_engine.domain.actors import actor_key
from ledger_engine.domain.changes import require
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.types import ChainAddress, Digest, Identifier, Role
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE

AccountKind = Literal["staff", "worker", "listener", "artist", "operator"]


class RegisterAccountPayload(Payload):
    account_id: Identifier
    kind: AccountKind
    identity_digest: Digest
    roles: list[Role] = []
    status: Literal["active", "deactivated"] = "active"
    payout_address: ChainAddress | None = None

    @field_validator("roles")
    @classmethod
    def _sorted_distinct(cls, roles: list[str]) -> list[str]:
        if list(roles) != sorted(set(roles)):
            raise ValueError("roles must be sorted and distinct")
        return roles


def account_key(account_id: str) -> str:
    return key("account", account_id)


def recipient_key(recipient_id: str) -> str:
    return key("recipient", recipient_id)


@command("RegisterAccount", payload=RegisterAccountPayload, roles={"admin"})
def register_account(ctx: RuleContext, p: RegisterAccountPayload) -> dict:
    changes = ctx.changes
    existing = changes.get(STATE, account_key(p.account_id))
    require(p.account_id != ctx.actor_id, ErrorCode.FOUR_EYES_REQUIRED, "an admin cannot change their own account")
    require(
        not p.roles or p.kind in ("staff", "worker"),
        ErrorCode.INVALID_STATE,
        "only staff and worker accounts hold roles",
    )
    if existing is None:
        changes.claim_unique(
            key("identity", p.identity_digest),
            {"account_id": p.account_id},
            ErrorCode.ALREADY_EXISTS,
            "this identity already has an account",
        )
        created_at = ctx.now_ms
    else:
        require(
            ctx.states_revision_of(STATE, account_key(p.account_id)),
            ErrorCode.STALE_REVISION,
            "changing an existing account needs its expected revision",
        )
        require(
            existing.data["identity_digest"] == p.identity_digest and existing.data["kind"] == p.kind,
            ErrorCode.INVALID_STATE,
            "an account's identity and kind never change",
        )
        created_at = existing.data["created_at_ms"]

    changes.put_state(
        account_key(p.account_id),
        {
            "account_id": p.account_id,
            "kind": p.kind,
            "identity_digest": p.identity_digest,
            "roles": list(p.roles),
            "status": p.status,
            "created_at_ms": created_at,
            "updated_at_ms": ctx.now_ms,
        },
    )
    if p.kind in ("staff", "worker"):
        changes.put_state(actor_key(p.account_id), {"roles": list(p.roles), "status": p.status})
    if p.payout_address is not None:
        _set_initial_recipient(ctx, p)
    changes.event(
        "AccountProvisioned",
        account_id=p.account_id,
        kind=p.kind,
        roles=list(p.roles),
        status=p.status,
        created=existing is None,
    )
    return {"account_id": p.account_id, "created": existing is None}


def _set_initial_recipient(ctx: RuleContext, p: RegisterAccountPayload) -> None:
    """A payout address is set once here; later changes go through UpdateRecipient."""
    require(p.kind in ("artist", "operator"), ErrorCode.INVALID_STATE, "only artists and operators are paid")
    require(
        ctx.changes.get(STATE, recipient_key(p.account_id)) is None,
        ErrorCode.INVALID_STATE,
        "payout address changes need UpdateRecipient",
    )
    ctx.changes.put_state(
        recipient_key(p.account_id),
        {"recipient_id": p.account_id, "payout_address": p.payout_address, "version": 1},
    )
