"""Accounts as the ledger holds them, and the commands that provision and change them."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from ledger_engine.domain.actors import GUARDED_ROLES, STAFF_ROLES
from ledger_engine.domain.identity import keyed_identity
from ledger_engine.domain.ruleset import ROLES
from ledger_engine.domain.schema.money_payouts import Recipient
from ledger_engine.domain.schema.staff import StaffChange
from ledger_engine.open_json import Unvalidated
from ledger_engine.selectors import account_queries, payout_queries, staff_queries
from ledger_engine.selectors.account_queries import AccountRecord as Account
from ledger_engine.selectors.view import LedgerView
from porto_console.console.commands import CommandRequest


@dataclass(frozen=True, slots=True)
class AccountPage:
    """What an account's page shows of the ledger."""

    account: Account | None
    recipient: Recipient | None
    actor_roles: list[str]  # the roles the ledger checks for this actor (empty unless active)
    four_eyes: bool  # whether guarded staff changes need two admins now
    staff_changes: list[StaffChange]


def account_page(view: LedgerView, account_id: str) -> AccountPage:
    return AccountPage(account=account_queries.account(view, account_id),
                       recipient=payout_queries.recipient(view, account_id),
                       actor_roles=account_queries.actor_roles(view, account_id),
                       four_eyes=account_queries.four_eyes(view),
                       staff_changes=staff_queries.changes(view, account_id=account_id))


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
    payload: Unvalidated = {"account_id": account_id, "kind": kind,
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
