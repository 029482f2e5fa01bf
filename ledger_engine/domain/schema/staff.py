"""Accounts, actors, staff changes and staff credentials (docs/records/staff.md)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from ledger_engine.keys import key
from ledger_engine.open_json import RecordData

Status = Literal["active", "deactivated"]


class Account(TypedDict):
    account_id: str
    kind: str
    identity_digest: str
    identity_scheme: NotRequired[Literal["hmac-sha256"]]  # absent: the unkeyed digest (domain/identity.py)
    display_name: NotRequired[str]  # a recipient's public name; absent: shown by its ID
    roles: list[str]
    status: Status
    created_at_ms: int
    updated_at_ms: int


class Actor(TypedDict):
    """What the ledger checks a command's actor against: its roles and whether it is active."""

    roles: list[str]
    status: Status


class StaffChange(TypedDict):
    change_id: str
    change: RecordData  # its kind and target
    target: str
    status: Literal["pending", "approved", "declined", "expired"]
    requested_by: str
    requested_at_ms: int
    expires_at_ms: int
    decision: RecordData | None


class StaffCredentials(TypedDict, total=False):
    """Whether a staff member's own credentials are set, or wait for them after an enrolment link or a reset."""

    account_id: str
    status: Literal["pending", "enrolled"]
    reset: str | None  # the factor a reset cleared; None for a new account's first enrolment
    staff_change_id: str | None
    link_id: str
    link_issued_by: str
    since_ms: int
    enrolled_at_ms: int


def actor_key(actor_id: str) -> str:
    return key("actor", actor_id)


def account_key(account_id: str) -> str:
    return key("account", account_id)


def change_key(change_id: str) -> str:
    return key("staff_change", change_id)


def credentials_key(account_id: str) -> str:
    return key("staff_credentials", account_id)


def pending_change_sentinel(target: str) -> str:
    return key("staff_change_pending", target)
