"""Account selectors: accounts and their actors, staff credentials, the step-up key the ledger trusts.

Each takes a ``LedgerView`` (selectors/view.py) and returns typed records
(domain/schema/staff.py); the console reads accounts through these alone and
never builds an account key (docs/adr/0058). The expected revisions a
command about an account states are made here too, for the same reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ledger_engine.domain.actors import four_eyes_governance
from ledger_engine.domain.changes import Changes
from ledger_engine.domain.schema.staff import Account, StaffCredentials, account_key, actor_key, credentials_key
from ledger_engine.domain.step_up import VERIFIER_KEY
from ledger_engine.keys import IDENTIFIER_PATTERN
from ledger_engine.layout import STATE
from ledger_engine.open_json import Unvalidated
from ledger_engine.selectors.view import LedgerView

ACCOUNT_PREFIX = "account/"


@dataclass(frozen=True)
class AccountRecord:
    account_id: str
    revision: int
    data: Account

    @property
    def roles(self) -> list[str]:
        return self.data["roles"]

    @property
    def active(self) -> bool:
        return self.data["status"] == "active"

    @property
    def display_name(self) -> str | None:
        return self.data.get("display_name")


def accounts(view: LedgerView, *, kind: str = "", status: str = "", role: str = "") -> list[AccountRecord]:
    """Accounts by account ID, those of ``kind``, in ``status`` and holding ``role`` where given."""
    return [AccountRecord(record.data["account_id"], record.revision, record.data_as(Account))
            for _key, record in view.records(ACCOUNT_PREFIX)
            if (not kind or record.data["kind"] == kind) and (not status or record.data["status"] == status)
            and (not role or role in record.data["roles"])]


def account(view: LedgerView, account_id: str) -> AccountRecord | None:
    record = view.record(account_key(account_id))
    return AccountRecord(account_id, record.revision, record.data_as(Account)) if record else None


def display_names(view: LedgerView, account_ids: Iterable[str]) -> dict[str, str]:
    """The display name of each of these accounts that has one (an artist or operator may), by account ID; a
    string that is no account ID has none."""
    names = {}
    for account_id in account_ids:
        if not re.fullmatch(IDENTIFIER_PATTERN, account_id):
            continue
        record = view.record(account_key(account_id))
        if record is not None and "display_name" in record.data:
            names[account_id] = record.data["display_name"]
    return names


def actor_roles(view: LedgerView, actor_id: str) -> list[str]:
    """The roles the ledger checks for this actor (empty unless active)."""
    record = view.record(actor_key(actor_id))
    return record.data["roles"] if record and record.data["status"] == "active" else []


def four_eyes(view: LedgerView) -> bool:
    """Whether guarded staff changes need two admins now: the ledger's own rule, read at this boundary."""
    return four_eyes_governance(Changes(base=view.as_rules_read()))


def credentials(view: LedgerView, account_id: str) -> StaffCredentials | None:
    record = view.record(credentials_key(account_id))
    return record.data_as(StaffCredentials) if record else None


def trusted_step_up_key(view: LedgerView) -> str | None:
    """The public key whose step-up proofs the ledger accepts, or None before one is registered."""
    record = view.record(VERIFIER_KEY)
    return record.data["public_key"] if record else None


def expected_account_revision(account_id: str, revision: int | None) -> Unvalidated:
    """What a command about ``account_id`` expects of it: ``revision``, or None for an account not yet there."""
    return {"cf": STATE, "key": account_key(account_id), "revision": revision}
