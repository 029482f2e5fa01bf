"""Accounts as the ledger holds them, and the commands that provision and change them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.pending import PendingBatch
from ledger_engine.domain.actors import GUARDED_ROLES, actor_key, four_eyes_governance
from ledger_engine.domain.changes import Changes
from ledger_engine.domain.commands.accounts import account_key, identity_digest, recipient_key
from ledger_engine.layout import STATE
from porto_console.console.commands import CommandRequest
from porto_console.console.services.rows import records


@dataclass(frozen=True)
class Account:
    account_id: str
    revision: int
    data: dict[str, Any]

    @property
    def roles(self) -> list[str]:
        return self.data["roles"]

    @property
    def active(self) -> bool:
        return self.data["status"] == "active"


def accounts(ledger: LedgerOwner, *, kind: str = "", status: str = "", role: str = "") -> Iterator[Account]:
    for _key, revision, data in records(ledger, "account/"):
        if (kind and data["kind"] != kind) or (status and data["status"] != status) or (role and role not in data["roles"]):
            continue
        yield Account(data["account_id"], revision, data)


def account(ledger: LedgerOwner, account_id: str) -> Account | None:
    record = ledger.get(STATE, account_key(account_id))
    return Account(account_id, record.revision, record.data) if record else None


def recipient(ledger: LedgerOwner, account_id: str) -> dict[str, Any] | None:
    record = ledger.get(STATE, recipient_key(account_id))
    return record.data if record else None


def actor_roles(ledger: LedgerOwner, account_id: str) -> list[str]:
    """The roles the ledger checks for this actor (empty unless active)."""
    record = ledger.get(STATE, actor_key(account_id))
    return record.data["roles"] if record and record.data["status"] == "active" else []


def four_eyes(ledger: LedgerOwner) -> bool:
    """Whether guarded staff changes need two admins now: the ledger's own rule, read at this moment."""
    return four_eyes_governance(Changes(base=PendingBatch(ledger.store)))


def guarded(roles) -> list[str]:
    return sorted(set(roles) & GUARDED_ROLES)


def provision(*, account_id: str, kind: str, identity: str, roles: list[str],
              payout_address: str = "") -> CommandRequest:
    payload: dict[str, Any] = {"account_id": account_id, "kind": kind,
                               "identity_digest": identity_digest(kind, identity), "roles": sorted(roles)}
    if payout_address:
        payload["payout_address"] = payout_address
    return CommandRequest("RegisterAccount", payload,
                          expected_revisions=[{"cf": STATE, "key": account_key(account_id), "revision": None}])


def change(current: Account, *, roles: list[str], active: bool, seen_revision: int) -> CommandRequest:
    """The same account with other roles or status, expected at the revision the admin saw.

    Guarded roles the form could not offer (four eyes) stay as the account holds them.
    """
    payload = {"account_id": current.account_id, "kind": current.data["kind"],
               "identity_digest": current.data["identity_digest"], "roles": sorted(roles),
               "status": "active" if active else "deactivated"}
    return CommandRequest("RegisterAccount", payload, expected_revisions=[
        {"cf": STATE, "key": account_key(current.account_id), "revision": seen_revision}])
