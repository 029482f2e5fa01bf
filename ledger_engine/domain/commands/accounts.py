"""RegisterAccount: provision a domain or staff account and its roles.

Only an admin provisions. The core never sees the raw provider subject: the
admission adapter keeps that mapping in ``private_aux`` and hands the core a
digest, which is the account's identity sentinel (``domain/identity.py``):
keyed, and saying so in ``identity_scheme``, for every account the console
provisions.

Once two admins are active (``actors.four_eyes_governance``), one admin alone
may no longer grant or remove a guarded role (admin, finance), reactivate an
account or deactivate one holding a guarded role: those go through
``RequestStaffChange`` and another admin's ``DecideStaffChange``. Guarded roles
belong to staff only, and never both on one account; adapter and worker roles
(ingest, signer, ...) belong to worker accounts only, whoever provisions them.

An artist or an operator may carry a display name: the public name it is paid
and shown under (docs/adr/0098), never a legal identity, which stays outside
the ledger. Like roles, it is restated by each registration of the account, so
one that leaves it out removes it. No two recipients share a name, however
cased or composed (a uniqueness sentinel of the name's NFKC case fold), and no
name is another account's ID.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Annotated, Any, Iterable, Literal, Mapping

from pydantic import AfterValidator, field_validator, model_validator

from ledger_engine.domain.actors import (
    GUARDED_ROLES, four_eyes_governance, require_no_role_conflict, require_not_owner, require_roles_fit_kind,
)
from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.display_text import display_text
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_payouts import recipient_key
from ledger_engine.domain.schema.staff import Account, account_key, actor_key
from ledger_engine.domain.types import ChainAddress, Digest, Identifier, Role
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import IDENTIFIER_PATTERN, key
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

AccountKind = Literal["staff", "worker", "listener", "artist", "operator"]
RECIPIENT_KINDS = ("artist", "operator")
MAX_DISPLAY_NAME_CHARS = 100
valid_display_name = display_text("a display name", MAX_DISPLAY_NAME_CHARS)
DisplayName = Annotated[str, AfterValidator(valid_display_name)]


class RegisterAccountPayload(Payload):
    account_id: Identifier
    kind: AccountKind
    identity_digest: Digest
    identity_scheme: Literal["hmac-sha256"] | None = None  # absent: the unkeyed digest of earlier accounts
    roles: list[Role] = []
    status: Literal["active", "deactivated"] = "active"
    payout_address: ChainAddress | None = None
    # The name a recipient is paid and shown under (a stage or trading name); absent: shown by its ID alone.
    display_name: DisplayName | None = None

    @field_validator("roles")
    @classmethod
    def _sorted_distinct(cls, roles: list[str]) -> list[str]:
        if list(roles) != sorted(set(roles)):
            raise ValueError("roles must be sorted and distinct")
        return roles

    @model_validator(mode="after")
    def _named_only_if_paid(self) -> "RegisterAccountPayload":
        if self.display_name is not None and self.kind not in RECIPIENT_KINDS:
            raise ValueError("only an artist or an operator has a display name")
        return self


@command("RegisterAccount", payload=RegisterAccountPayload, roles={"admin"})
def register_account(ctx: RuleContext, p: RegisterAccountPayload) -> CommandResult:
    changes = ctx.changes
    existing = changes.get(STATE, account_key(p.account_id))
    require(p.account_id != ctx.actor_id, ErrorCode.FOUR_EYES_REQUIRED, "an admin cannot change their own account")
    require_not_owner(p.account_id)
    # An actor named in genesis has no account record: registering its ID would overwrite its roles unguarded.
    require(existing is not None or changes.get(STATE, actor_key(p.account_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"{p.account_id} is an actor named in genesis: its roles change only through a staff change")
    require_roles_fit_kind(p.kind, p.roles)
    require_no_role_conflict(p.roles)
    needs_second_admin = _needs_second_admin(existing.data_as(Account) if existing else None, p)
    if needs_second_admin is not None:
        require(not four_eyes_governance(changes), ErrorCode.FOUR_EYES_REQUIRED, needs_second_admin)
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
            existing.data["identity_digest"] == p.identity_digest and existing.data["kind"] == p.kind
            and existing.data.get("identity_scheme") == p.identity_scheme,
            ErrorCode.INVALID_STATE,
            "an account's identity and kind never change",
        )
        created_at = existing.data["created_at_ms"]

    identity = {"identity_digest": p.identity_digest,
                **({"identity_scheme": p.identity_scheme} if p.identity_scheme else {})}
    _claim_display_name(changes, p, existing.data_as(Account) if existing else None)
    named = {"display_name": p.display_name} if p.display_name is not None else {}
    put_account(changes, {"account_id": p.account_id, "kind": p.kind, **identity, **named,
                          "created_at_ms": created_at}, roles=p.roles, status=p.status, now_ms=ctx.now_ms)
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


def put_account(changes: Changes, account: Mapping[str, Any], *, roles: Iterable[str], status: str,
                now_ms: int) -> None:
    """Write an account with these roles and status; a staff or worker account's actor record follows it.

    ``account`` gives the rest: an ``Account``, or a new one's ID, kind, identity, display name and creation
    time."""
    assert status in ("active", "deactivated"), status
    roles = sorted(roles)
    changes.put_state(account_key(account["account_id"]), {
        "account_id": account["account_id"],
        "kind": account["kind"],
        "identity_digest": account["identity_digest"],
        **({"identity_scheme": account["identity_scheme"]} if "identity_scheme" in account else {}),
        **({"display_name": account["display_name"]} if "display_name" in account else {}),
        "roles": roles,
        "status": status,
        "created_at_ms": account["created_at_ms"],
        "updated_at_ms": now_ms,
    })
    if account["kind"] in ("staff", "worker"):
        changes.put_state(actor_key(account["account_id"]), {"roles": roles, "status": status})


def _needs_second_admin(existing: Account | None, p: RegisterAccountPayload) -> str | None:
    """Why this change needs a second admin once there are two (it grants power, or removes an admin or finance
    from service), or None.

    Asked before ``four_eyes_governance``, so an ordinary registration never scans the actors.
    """
    before_roles = set(existing["roles"]) if existing else set()
    changed = sorted((before_roles ^ set(p.roles)) & GUARDED_ROLES)
    if changed:
        return f"granting or removing {', '.join(changed)} needs a second admin: request it as a staff change"
    if existing is None:
        return None
    if existing["status"] == "deactivated" and p.status == "active":
        return "reactivating an account needs a second admin: request it as a staff change"
    guarded = sorted(before_roles & GUARDED_ROLES)
    if guarded and existing["status"] == "active" and p.status == "deactivated":
        return (f"deactivating an account holding {', '.join(guarded)} needs a second admin: "
                "request it as a staff change")
    return None


def display_name_key(name: str) -> str:
    """The sentinel of a display name as people tell names apart: compatibility forms and case folded together."""
    comparable = unicodedata.normalize("NFKC", name).casefold()
    return key("display_name", hashlib.sha256(comparable.encode()).hexdigest())


def _claim_display_name(changes: Changes, p: RegisterAccountPayload, before: Account | None) -> None:
    """One recipient a name, the one it was shown under, however it is cased or composed; and no name that is
    another account's ID. A rename frees the old name."""
    old = before.get("display_name") if before else None
    if old is not None:
        changes.release_unique(display_name_key(old))
    if p.display_name is None:
        return
    require(p.display_name == p.account_id or not _is_an_account(changes, p.display_name), ErrorCode.ALREADY_EXISTS,
            f"{p.display_name!r} is another account's ID: a display name never is")
    changes.claim_unique(display_name_key(p.display_name), {"account_id": p.account_id}, ErrorCode.ALREADY_EXISTS,
                         lambda holder: f"{holder['account_id']} is shown as {p.display_name!r} already: "
                                        "each recipient's name tells it apart")


def _is_an_account(changes: Changes, text: str) -> bool:
    if not re.fullmatch(IDENTIFIER_PATTERN, text):
        return False
    return changes.get(STATE, account_key(text)) is not None or changes.get(STATE, actor_key(text)) is not None


def _set_initial_recipient(ctx: RuleContext, p: RegisterAccountPayload) -> None:
    """A payout address is set once here; later changes go through UpdateRecipient."""
    require(p.kind in RECIPIENT_KINDS, ErrorCode.INVALID_STATE, "only artists and operators are paid")
    require(
        ctx.changes.get(STATE, recipient_key(p.account_id)) is None,
        ErrorCode.INVALID_STATE,
        "payout address changes need UpdateRecipient",
    )
    ctx.changes.put_state(
        recipient_key(p.account_id),
        {"recipient_id": p.account_id, "payout_address": p.payout_address, "version": 1},
    )
