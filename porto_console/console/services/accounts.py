"""Accounts as the ledger holds them, and the commands that provision and change them."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.domain.actors import GUARDED_ROLES, STAFF_ROLES
from ledger_engine.domain.identity import keyed_identity
from ledger_engine.domain.ruleset import ROLES
from ledger_engine.domain.schema.money_payouts import Recipient
from ledger_engine.selectors import account_queries, payout_queries
from ledger_engine.selectors.account_queries import AccountRecord as Account
from porto_console.console.commands import CommandRequest

Row = TypeVar("Row")

def accounts(ledger: LedgerOwner, *, kind: str = "", status: str = "", role: str = "") -> list[Account]:
    return account_queries.accounts(ledger.view(), kind=kind, status=status, role=role)


def account(ledger: LedgerOwner, account_id: str) -> Account | None:
    return account_queries.account(ledger.view(), account_id)


def recipient(ledger: LedgerOwner, account_id: str) -> Recipient | None:
    return payout_queries.recipient(ledger.view(), account_id)


def named(ledger: LedgerOwner, rows: list[Row], recipient_of: Callable[[Row], str]) -> tuple[list[Row], dict[str, str]]:
    """``rows`` and the display names of the recipients they name, read at the same boundary (for an export)."""
    return rows, account_queries.display_names(ledger.view(), {recipient_of(row) for row in rows})


def actor_roles(ledger: LedgerOwner, account_id: str) -> list[str]:
    """The roles the ledger checks for this actor (empty unless active)."""
    return account_queries.actor_roles(ledger.view(), account_id)


def active_admins(ledger: LedgerOwner) -> list[str]:
    return account_queries.active_admins(ledger.view())


def four_eyes(ledger: LedgerOwner) -> bool:
    """Whether guarded staff changes need two admins now: the ledger's own rule, read at this moment."""
    return account_queries.four_eyes(ledger.view())


def guarded(roles) -> list[str]:
    return sorted(set(roles) & GUARDED_ROLES)


def identity_key() -> bytes:
    """The deployment's identity key: identity digests are keyed, so no export holder can confirm a guess."""
    if not settings.IDENTITY_KEY:
        raise ImproperlyConfigured("PORTO_IDENTITY_KEY is not set: accounts' identity digests need a key of their own")
    return settings.IDENTITY_KEY.encode()


def roles_for(kind: str) -> list[str]:
    """The roles the ledger lets an account of ``kind`` hold: a person's on staff; on a worker, any but guarded."""
    if kind == "staff":
        return sorted(STAFF_ROLES)
    if kind == "worker":
        return sorted(ROLES - GUARDED_ROLES)
    return []


def provision(*, account_id: str, kind: str, identity: str, roles: list[str],
              payout_address: str = "", display_name: str = "") -> CommandRequest:
    payload: dict[str, Any] = {"account_id": account_id, "kind": kind,
                               "roles": sorted(roles),
                               **keyed_identity(identity_key(), kind, identity)}
    if payout_address:
        payload["payout_address"] = payout_address
    if display_name:
        payload["display_name"] = display_name
    return CommandRequest("RegisterAccount", payload,
                          expected_revisions=[account_queries.expected_account_revision(account_id, None)])


def change(current: Account, *, roles: list[str], active: bool, seen_revision: int,
           display_name: str | None = None) -> CommandRequest:
    """The same account with other roles, status or display name, expected at the revision the admin saw.

    Guarded roles the form could not offer (four eyes) stay as the account holds them; ``display_name`` None
    keeps the account's name, an empty one removes it.
    """
    name = current.display_name if display_name is None else display_name
    payload = {"account_id": current.account_id, "kind": current.data["kind"],
               "identity_digest": current.data["identity_digest"], "roles": sorted(roles),
               **({"identity_scheme": current.data["identity_scheme"]} if "identity_scheme" in current.data else {}),
               **({"display_name": name} if name else {}),
               "status": "active" if active else "deactivated"}
    return CommandRequest("RegisterAccount", payload, expected_revisions=[
        account_queries.expected_account_revision(current.account_id, seen_revision)])
