"""RecordProfileChange and RecordLockoutCleared: the console's own staff changes, in the journal.

Django keeps staff passwords, authenticators and sign-in lockouts; the ledger
keeps who changed them, so an auditor reads in one place who changed whom
(the "account and entitlement changes" and "profile changes" families of
docs/spec/domain-model-and-state-machines.md §6). The
console records each change here before it makes it, and makes it only once
the ledger accepted it.

A staff account's credentials are ``pending`` from an admin's first enrolment
link, or from an approved reset (``staff_changes``), until the owner
completes enrolment through the latest link; then ``enrolled``. One admin may
send a first link only while the account has never enrolled: replacing
enrolled credentials is a reset, which takes two admins.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ledger_engine.domain.actors import ADMIN, ANY_STAFF, actor_roles
from ledger_engine.domain.changes import require, require_present
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.staff import Account, StaffCredentials, account_key, credentials_key
from ledger_engine.domain.types import Count, Digest, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

Factor = Literal["authenticator", "password"]
# What a completed enrolment must set: a new account both factors, a reset the factor it replaced.
FACTORS_FOR = {None: ["authenticator", "password"], "reset_password": ["password"],
               "reset_authenticator": ["authenticator"]}


class RecordProfileChangePayload(Payload):
    account_id: Identifier
    change: Literal["enrolment_link_issued", "enrolment_completed", "password_changed"]
    link_id: Identifier | None = None
    factors: list[Factor] = []

    @model_validator(mode="after")
    def _shape(self) -> "RecordProfileChangePayload":
        if (self.link_id is None) != (self.change == "password_changed"):
            raise ValueError("an enrolment link change names its link; a password change does not")
        if self.factors != sorted(set(self.factors)) or (self.change == "enrolment_completed") != bool(self.factors):
            raise ValueError("a completed enrolment lists the factors it set, sorted; other changes list none")
        return self


class RecordLockoutClearedPayload(Payload):
    clearance_id: Identifier
    username_digest: Digest
    address_digest: Digest
    account_id: Identifier | None = None
    failures: Count = Field(ge=1)


@command("RecordProfileChange", payload=RecordProfileChangePayload, roles={ANY_STAFF})
def record_profile_change(ctx: RuleContext, p: RecordProfileChangePayload) -> CommandResult:
    account = load(ctx.changes, account_key(p.account_id), f"account {p.account_id}", Account)
    require(account["kind"] == "staff", ErrorCode.INVALID_STATE, "profile changes are for staff accounts")
    current = ctx.changes.get(STATE, credentials_key(p.account_id))
    credentials = current.data_as(StaffCredentials) if current else None
    if p.change == "enrolment_link_issued":
        _issue_link(ctx, p, account, credentials)
    else:
        require(ctx.actor_id == p.account_id, ErrorCode.CAPABILITY_MISSING,
                f"only {p.account_id} sets their own credentials")
        if p.change == "enrolment_completed":
            _complete(ctx, p, credentials)
        else:
            require(credentials is None or credentials["status"] == "enrolled", ErrorCode.INVALID_STATE,
                    "credentials awaiting enrolment are set through the enrolment link")
    ctx.changes.event("ProfileChanged", account_id=p.account_id, change=p.change, actor_id=ctx.actor_id,
                      link_id=p.link_id, factors=list(p.factors))
    return {"account_id": p.account_id, "change": p.change}


def _issue_link(ctx: RuleContext, p: RecordProfileChangePayload, account: Account,
                credentials: StaffCredentials | None) -> None:
    require(ADMIN in actor_roles(ctx, ctx.actor_id), ErrorCode.CAPABILITY_MISSING, "only an admin sends enrolment links")
    require(ctx.actor_id != p.account_id, ErrorCode.FOUR_EYES_REQUIRED, "an admin cannot send themselves a link")
    require(account["status"] == "active", ErrorCode.INVALID_STATE, f"account {p.account_id} is deactivated")
    require(credentials is None or credentials["status"] == "pending", ErrorCode.FOUR_EYES_REQUIRED,
            f"{p.account_id} has enrolled; replacing their credentials is a reset, which needs a second admin")
    ctx.changes.put_state(credentials_key(p.account_id), {
        **(credentials or {"account_id": p.account_id, "status": "pending", "reset": None, "staff_change_id": None}),
        "link_id": p.link_id, "link_issued_by": ctx.actor_id, "since_ms": ctx.now_ms})


def _complete(ctx: RuleContext, p: RecordProfileChangePayload, credentials: StaffCredentials | None) -> None:
    nothing_waiting = f"{p.account_id} has no enrolment waiting"
    credentials = require_present(credentials, ErrorCode.INVALID_STATE, nothing_waiting)
    require(credentials["status"] == "pending", ErrorCode.INVALID_STATE, nothing_waiting)
    require(credentials.get("link_id") == p.link_id, ErrorCode.INVALID_REFERENCE,
            "that enrolment link has been replaced by a newer one")
    needed = FACTORS_FOR[credentials["reset"]]
    require(p.factors == needed, ErrorCode.INVALID_STATE, f"this enrolment sets {', '.join(needed)}")
    ctx.changes.put_state(credentials_key(p.account_id), {**credentials, "status": "enrolled",
                                                          "enrolled_at_ms": ctx.now_ms})


@command("RecordLockoutCleared", payload=RecordLockoutClearedPayload, roles={ADMIN})
def record_lockout_cleared(ctx: RuleContext, p: RecordLockoutClearedPayload) -> CommandResult:
    """A sign-in lockout an admin lifted; the username and address stay out of the ledger, as digests."""
    ctx.changes.claim_unique(key("lockout_clearance", p.clearance_id), {"actor_id": ctx.actor_id},
                             ErrorCode.ALREADY_EXISTS, f"lockout clearance {p.clearance_id} is already recorded")
    ctx.changes.event("LockoutCleared", clearance_id=p.clearance_id, actor_id=ctx.actor_id, account_id=p.account_id,
                      username_digest=p.username_digest, address_digest=p.address_digest, failures=p.failures)
    return {"clearance_id": p.clearance_id}
