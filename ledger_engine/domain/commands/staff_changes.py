"""RequestStaffChange and DecideStaffChange: changes to who may do what, by two admins.

One admin requests a change to another staff account (grant or remove a role,
reset the password or the authenticator, reactivate or deactivate), to the
step-up verifier key or to the payer's address (``domain/payer.py``); a second admin, neither the requester nor the target,
approves it with a fresh step-up proof, or declines it. The ledger enforces
both halves: the same actor deciding is ``FOUR_EYES_REQUIRED``.

Approving a role or status change writes the account at once. Approving a
credential reset marks the account's credentials ``pending``: the console then
clears the password or authenticator and sends the owner a one-time
enrolment link (``profile_changes``), and only the owner sets the new secret.

Each account (and the verifier key, and the payer) has at most one pending change, held by a
``staff_change_pending/<target>`` sentinel; a request expires after
``REQUEST_TTL_MS`` and a later request replaces an expired one.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ledger_engine.domain.actors import is_staff, require_no_role_conflict, require_roles_fit_kind, role_conflict
from ledger_engine.domain.changes import Changes, require, require_present
from ledger_engine.domain.commands.accounts import put_account
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.staff import (
    Account, Actor, StaffChange, account_key, actor_key, change_key, credentials_key, pending_change_sentinel,
)
from ledger_engine.domain.payer import ADDRESS_PATTERN, PAYER_KEY, payer_address, payer_record
from ledger_engine.domain.step_up import PUBLIC_KEY_PATTERN, VERIFIER_KEY, verifier_record
from ledger_engine.domain.types import Identifier, Role
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE, UNIQUE
from ledger_engine.open_json import CommandResult, RecordData

REQUEST_TTL_MS = 7 * 86_400_000
VERIFIER_TARGET = "step_up_verifier"
PAYER_TARGET = "payer_address"
CREDENTIAL_RESETS = ("reset_password", "reset_authenticator")
# An administrator named in genesis has no account or console credentials: its roles and status can change.
GENESIS_ACTOR_CHANGES = ("remove_role", "deactivate", "reactivate")


class GrantRole(Payload):
    kind: Literal["grant_role"]
    account_id: Identifier
    role: Role


class RemoveRole(Payload):
    kind: Literal["remove_role"]
    account_id: Identifier
    role: Role


class ResetPassword(Payload):
    kind: Literal["reset_password"]
    account_id: Identifier


class ResetAuthenticator(Payload):
    kind: Literal["reset_authenticator"]
    account_id: Identifier


class Reactivate(Payload):
    kind: Literal["reactivate"]
    account_id: Identifier


class Deactivate(Payload):
    kind: Literal["deactivate"]
    account_id: Identifier


class SetStepUpVerifier(Payload):
    kind: Literal["set_step_up_verifier"]
    public_key: Annotated[str, Field(pattern=PUBLIC_KEY_PATTERN)]


class SetPayerAddress(Payload):
    kind: Literal["set_payer_address"]
    payer_address: Annotated[str, Field(pattern=ADDRESS_PATTERN)]


ChangeTerms = Annotated[GrantRole | RemoveRole | ResetPassword | ResetAuthenticator | Reactivate | Deactivate
                        | SetStepUpVerifier | SetPayerAddress, Field(discriminator="kind")]
DeclineReason = Literal["not_authorised", "identity_not_confirmed", "requested_in_error", "superseded"]


class RequestStaffChangePayload(Payload):
    change_id: Identifier
    change: ChangeTerms


class DecideStaffChangePayload(Payload):
    change_id: Identifier
    decision: Literal["approve", "decline"]
    reason: DeclineReason | None = None

    @model_validator(mode="after")
    def _reason_for_a_decline(self) -> "DecideStaffChangePayload":
        if (self.decision == "decline") != (self.reason is not None):
            raise ValueError("a decline states a reason; an approval does not")
        return self


def target_of(change: RecordData) -> str:
    if change["kind"] == "set_payer_address":
        return PAYER_TARGET
    target: str = change.get("account_id", VERIFIER_TARGET)
    return target


@command("RequestStaffChange", payload=RequestStaffChangePayload, roles={"admin"})
def request_staff_change(ctx: RuleContext, p: RequestStaffChangePayload) -> CommandResult:
    changes = ctx.changes
    change = p.change.model_dump(mode="json")
    target = target_of(change)
    require(changes.get(STATE, change_key(p.change_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"staff change {p.change_id} already exists")
    require(target != ctx.actor_id, ErrorCode.FOUR_EYES_REQUIRED,
            "an admin cannot request a change to their own account: another admin must")
    _require_applicable(changes, change)
    _expire_stale_request(ctx, target)
    changes.claim_unique(pending_change_sentinel(target), {"change_id": p.change_id}, ErrorCode.ALREADY_EXISTS,
                         f"{target} already has a pending staff change; decide that one first")
    changes.put_state(change_key(p.change_id), {
        "change_id": p.change_id, "change": change, "target": target, "status": "pending",
        "requested_by": ctx.actor_id, "requested_at_ms": ctx.now_ms,
        "expires_at_ms": ctx.now_ms + REQUEST_TTL_MS, "decision": None,
    })
    changes.event("StaffChangeRequested", change_id=p.change_id, target=target, requested_by=ctx.actor_id, **change)
    return {"change_id": p.change_id, "target": target, "expires_at_ms": ctx.now_ms + REQUEST_TTL_MS}


@command("DecideStaffChange", payload=DecideStaffChangePayload, roles={"admin"},
         step_up=lambda p: p.decision == "approve")
def decide_staff_change(ctx: RuleContext, p: DecideStaffChangePayload) -> CommandResult:
    changes = ctx.changes
    record = load(changes, change_key(p.change_id), f"staff change {p.change_id}", StaffChange)
    require(record["status"] == "pending", ErrorCode.INVALID_STATE, f"staff change {p.change_id} is {record['status']}")
    require(ctx.actor_id != record["requested_by"], ErrorCode.FOUR_EYES_REQUIRED,
            "the admin who requested a staff change cannot also decide it")
    require(ctx.actor_id != record["target"], ErrorCode.FOUR_EYES_REQUIRED,
            "an admin cannot decide a change to their own account")
    if p.decision == "approve":
        require(ctx.now_ms <= record["expires_at_ms"], ErrorCode.EXPIRED,
                f"staff change {p.change_id} expired unanswered; request it again")
        _require_applicable(changes, record["change"])
        _apply(ctx, record)
    status = "approved" if p.decision == "approve" else "declined"
    _close(ctx, record, status, {"decided_by": ctx.actor_id, "decided_at_ms": ctx.now_ms, "reason": p.reason})
    changes.event("StaffChangeApproved" if status == "approved" else "StaffChangeDeclined",
                  change_id=p.change_id, target=record["target"], requested_by=record["requested_by"],
                  decided_by=ctx.actor_id, reason=p.reason, **record["change"])
    return {"change_id": p.change_id, "status": status}


def _require_applicable(changes: Changes, change: RecordData) -> None:
    """The change makes sense against the ledger now: at request and again at approval."""
    if change["kind"] == "set_step_up_verifier":
        current = changes.get(STATE, VERIFIER_KEY)
        require(current is None or current.data["public_key"] != change["public_key"], ErrorCode.INVALID_STATE,
                "that key is already the step-up verifier")
        return
    if change["kind"] == "set_payer_address":
        require(payer_address(changes) != change["payer_address"], ErrorCode.INVALID_STATE,
                "that address is already the payer")
        return
    account, roles, active = _target(changes, change["account_id"])
    kind = change["kind"]
    require(account is not None or kind in GENESIS_ACTOR_CHANGES, ErrorCode.INVALID_STATE,
            f"{change['account_id']} is an administrator named in genesis: only {', '.join(GENESIS_ACTOR_CHANGES)}")
    if kind == "grant_role":
        require(change["role"] not in roles, ErrorCode.INVALID_STATE, f"the account already holds {change['role']}")
        require_roles_fit_kind("staff", {change["role"]})
        require_no_role_conflict(roles | {change["role"]})
    elif kind == "remove_role":
        require(change["role"] in roles, ErrorCode.INVALID_STATE, f"the account does not hold {change['role']}")
    elif kind == "reactivate":
        require(not active, ErrorCode.INVALID_STATE, "the account is already active")
    else:
        require(active, ErrorCode.INVALID_STATE, "the account is deactivated; reactivate it first")


def _target(changes: Changes, account_id: str) -> tuple[Account | None, set[str], bool]:
    """A staff account, or an administrator named in genesis (an actor without an account): its roles and status."""
    record = changes.get(STATE, account_key(account_id))
    if record is not None:
        account = record.data_as(Account)
        require(account["kind"] == "staff", ErrorCode.INVALID_STATE, "staff changes are for staff accounts")
        return account, set(account["roles"]), account["status"] == "active"
    missing = f"account {account_id} does not exist"
    actor = require_present(changes.get(STATE, actor_key(account_id)), ErrorCode.NOT_FOUND, missing).data_as(Actor)
    require(is_staff(changes, account_id), ErrorCode.NOT_FOUND, missing)
    return None, set(actor["roles"]), actor["status"] == "active"


def _apply(ctx: RuleContext, record: StaffChange) -> None:
    change = record["change"]
    kind = change["kind"]
    if kind == "set_step_up_verifier":
        ctx.changes.put_state(VERIFIER_KEY, verifier_record(change["public_key"]))
        return
    if kind == "set_payer_address":
        ctx.changes.put_state(PAYER_KEY, payer_record(change["payer_address"]))
        return
    if kind in CREDENTIAL_RESETS:
        ctx.changes.put_state(credentials_key(change["account_id"]), {
            "account_id": change["account_id"], "status": "pending", "reset": kind,
            "staff_change_id": record["change_id"], "since_ms": ctx.now_ms})
        return
    account, roles, active = _target(ctx.changes, change["account_id"])
    status = "active" if active else "deactivated"
    if kind == "grant_role":
        roles.add(change["role"])
    elif kind == "remove_role":
        roles.discard(change["role"])
    else:
        status = "active" if kind == "reactivate" else "deactivated"
    assert role_conflict(roles) is None, "segregation of duties is checked before a change applies"
    if account is None:
        ctx.changes.put_state(actor_key(change["account_id"]), {"roles": sorted(roles), "status": status})
    else:
        put_account(ctx.changes, account, roles=roles, status=status, now_ms=ctx.now_ms)


def _expire_stale_request(ctx: RuleContext, target: str) -> None:
    """A pending request past its expiry no longer blocks a new one for the same target."""
    sentinel = ctx.changes.get(UNIQUE, pending_change_sentinel(target))
    if sentinel is None:
        return
    stale = load(ctx.changes, change_key(sentinel.data["change_id"]), "the pending staff change", StaffChange)
    if ctx.now_ms > stale["expires_at_ms"]:
        _close(ctx, stale, "expired", None)
        ctx.changes.event("StaffChangeExpired", change_id=stale["change_id"], target=target)


def _close(ctx: RuleContext, record: StaffChange, status: str, decision: RecordData | None) -> None:
    ctx.changes.put_state(change_key(record["change_id"]), {**record, "status": status, "decision": decision})
    ctx.changes.release_unique(pending_change_sentinel(record["target"]))
