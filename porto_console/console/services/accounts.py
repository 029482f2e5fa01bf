"""Accounts as the ledger holds them, and the commands that provision and change them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Iterator

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.actors import actor_key
from ledger_engine.domain.commands.accounts import account_key, recipient_key
from ledger_engine.layout import STATE
from porto_console.console.commands import CommandRequest
from porto_console.console.services.rows import records

IDENTITY_DOMAIN = "porto:identity:v1\n"


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


def identity_digest(kind: str, evidence: str) -> str:
    """The identity sentinel the ledger keeps instead of the identity itself (an email or provider subject)."""
    return hashlib.sha256(f"{IDENTITY_DOMAIN}{kind}\n{evidence.strip().lower()}".encode()).hexdigest()


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


def provision(*, account_id: str, kind: str, identity: str, roles: list[str],
              payout_address: str = "") -> CommandRequest:
    payload: dict[str, Any] = {"account_id": account_id, "kind": kind,
                               "identity_digest": identity_digest(kind, identity), "roles": sorted(roles)}
    if payout_address:
        payload["payout_address"] = payout_address
    return CommandRequest("RegisterAccount", payload,
                          expected_revisions=[{"cf": STATE, "key": account_key(account_id), "revision": None}])


def change(current: Account, *, roles: list[str], active: bool, seen_revision: int) -> CommandRequest:
    """The same account with other roles or status, expected at the revision the admin saw."""
    payload = {"account_id": current.account_id, "kind": current.data["kind"],
               "identity_digest": current.data["identity_digest"], "roles": sorted(roles),
               "status": "active" if active else "deactivated"}
    return CommandRequest("RegisterAccount", payload, expected_revisions=[
        {"cf": STATE, "key": account_key(current.account_id), "revision": seen_revision}])
