"""Actors and their capabilities, as the ledger itself records them.

A person's roles (``STAFF_ROLES``) are held by staff accounts; the others, the
adapters' and workers' (``WORKER_ROLES``), only by worker accounts, which act
through a credential issued on the ledger's host, never through a sign-in.
Some roles are guarded: ``finance`` moves money and ``admin`` decides who may.
Once the ledger has two active admins, a guarded role is granted or removed,
and an account holding one is deactivated or any account reactivated, only by
a request of one admin and the decision of another (``staff_changes``). Before
that, the genesis administrator is the only admin and the reviewed genesis is
the root of trust, so they provision alone. The step from one active admin to
two is one way: removing an admin needs a second admin who is not the one
removed, so the ledger never returns to a single admin by its own commands.

One actor has no account: the ledger's own, ``LEDGER_OWNER``, whose one role
``OWNER_ROLE`` lets it submit what only the owner process builds (a frozen
chunk of a day, docs/adr/0073). No account, genesis actor or credential holds
that role or bears that name (``require_not_owner``), and the gateway and the
internal API refuse its envelopes, so only the owner submits as it, in process.
"""

from __future__ import annotations

from typing import Iterable

from ledger_engine.domain.changes import Changes, require, require_present
from ledger_engine.domain.registry import RuleContext
from ledger_engine.domain.ruleset import OWNER_ROLE, ROLES
from ledger_engine.domain.schema.staff import Account, account_key, actor_key
from ledger_engine.domain.view import Record
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE

ADMIN, FINANCE = "admin", "finance"
GUARDED_ROLES = frozenset({ADMIN, FINANCE})
# Duties no account holds together: whoever manages access cannot also move money, and whoever signs payments
# cannot also attest what the chain did with them (docs/adr/0090).
CONFLICTING_ROLES = (frozenset({ADMIN, FINANCE}), frozenset({"signer", "observer"}))
# The roles a person holds; every other role is a trusted adapter's or a worker's.
STAFF_ROLES = frozenset({ADMIN, FINANCE, "ops", "auditor"})
WORKER_ROLES = ROLES - STAFF_ROLES
# A capability marker, not a role: any active staff account may submit commands about itself.
ANY_STAFF = "any-staff"
# Who pauses payment dispatch alone (the safe direction, with step-up) and asks for it to resume; an admin other
# than the one who asked approves a resume (commands/dispatch_switch.py).
DISPATCH_PAUSERS = frozenset({ADMIN, "ops"})
# The ledger's own actor: the rules know it and its one role without an account (see the module's docstring).
LEDGER_OWNER = OWNER_ROLE
OWNER_ROLES = frozenset({OWNER_ROLE})


def actor_roles(ctx: RuleContext, actor_id: str) -> frozenset[str]:
    if actor_id == LEDGER_OWNER:
        return OWNER_ROLES
    return _active_roles(ctx.changes.get(STATE, actor_key(actor_id)))


def require_not_owner(actor_id: str, code: ErrorCode = ErrorCode.ALREADY_EXISTS) -> None:
    """No account, genesis actor or credential is the ledger's own actor."""
    require(actor_id != LEDGER_OWNER, code, f"{LEDGER_OWNER} is the ledger's own actor: no account bears its name")


def _active_roles(record: Record | None) -> frozenset[str]:
    if record is None or record.data["status"] != "active":
        return frozenset()
    return frozenset(record.data["roles"])


def require_role(ctx: RuleContext, allowed: frozenset[str], record: Record | None) -> None:
    """The acting actor, whose record is ``record``, must be active and hold one of ``allowed``
    (or be staff, for ``ANY_STAFF``). The ledger's own actor holds ``OWNER_ROLE`` alone, with no record."""
    if ctx.actor_id == LEDGER_OWNER:
        require(OWNER_ROLE in allowed, ErrorCode.CAPABILITY_MISSING,
                f"the ledger's own actor submits only the owner's commands, not one needing {sorted(allowed)}")
        return
    record = require_present(record, ErrorCode.UNKNOWN_ACTOR, f"actor {ctx.actor_id} is not provisioned")
    roles = _active_roles(record)
    if ANY_STAFF in allowed and record.data["status"] == "active" and _is_staff(ctx.changes, ctx.actor_id, record):
        return
    require(
        roles & allowed,
        ErrorCode.CAPABILITY_MISSING,
        f"actor {ctx.actor_id} needs one of {sorted(allowed)}",
    )


def is_staff(changes: Changes, actor_id: str) -> bool:
    """A person: a staff account, or an administrator named in genesis (who has no account record)."""
    return _is_staff(changes, actor_id, None)


def _is_staff(changes: Changes, actor_id: str, actor: Record | None) -> bool:
    """``is_staff``, given the actor record when the caller has already read it."""
    account = changes.get(STATE, account_key(actor_id))
    if account is not None:
        return account.data_as(Account)["kind"] == "staff"
    if actor is None:
        actor = changes.get(STATE, actor_key(actor_id))
    return actor is not None and ADMIN in actor.data["roles"]


def require_other_actor(ctx: RuleContext, other_actor_id: str, what: str, act: str = "approve") -> None:
    """Four eyes: the acting actor must not be the one who did ``what``, now to ``act`` on it."""
    require(
        ctx.actor_id != other_actor_id,
        ErrorCode.FOUR_EYES_REQUIRED,
        f"the actor who {what} cannot also {act} it",
    )


def active_admins(changes: Changes) -> list[str]:
    return [record_key.split("/", 1)[1] for record_key, record in changes.scan(STATE, "actor/")
            if _is_active_admin(record)]


def _is_active_admin(record: Record) -> bool:
    return record.data["status"] == "active" and ADMIN in record.data["roles"]


def four_eyes_governance(changes: Changes) -> bool:
    """Whether staff changes need two admins: from the moment two admins are active, for good."""
    admins = (record for _, record in changes.scan(STATE, "actor/") if _is_active_admin(record))
    return next(admins, None) is not None and next(admins, None) is not None  # stops at the second admin


def role_conflict(roles: Iterable[str]) -> frozenset[str] | None:
    """The first pair of ``CONFLICTING_ROLES`` that ``roles`` holds together, or None."""
    held = set(roles)
    return next((pair for pair in CONFLICTING_ROLES if pair <= held), None)


def require_no_role_conflict(roles: Iterable[str]) -> None:
    conflict = role_conflict(roles)
    require(conflict is None, ErrorCode.ROLE_CONFLICT,
            f"no account may hold {' and '.join(sorted(conflict or ()))} together")


def require_roles_fit_kind(kind: str, roles: Iterable[str]) -> None:
    """Roles follow the kind of account: guarded roles on staff only, adapter and worker roles on workers only.

    A worker account has no sign-in and no enrolment link, so no one admin can act as one from the console.
    """
    roles = set(roles)
    require(not roles or kind in ("staff", "worker"), ErrorCode.INVALID_STATE,
            "only staff and worker accounts hold roles")
    require(not roles & GUARDED_ROLES or kind == "staff", ErrorCode.INVALID_STATE,
            f"only staff accounts hold {' or '.join(sorted(GUARDED_ROLES))}")
    require(not roles & WORKER_ROLES or kind == "worker", ErrorCode.INVALID_STATE,
            f"only worker accounts hold {', '.join(sorted(roles & WORKER_ROLES))}: a person holds "
            f"{', '.join(sorted(STAFF_ROLES))} only")
