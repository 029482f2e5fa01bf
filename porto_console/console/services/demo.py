"""The labelled demo: the fixture scenario in a fresh ledger and a console user for each demo staff account."""

from __future__ import annotations

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo import DEMO_LABEL, demo_scenario
from ledger_engine.demo.foundation import staff_email
from porto_console.console.roles import CONSOLE_ROLES
from porto_console.console.services.accounts import accounts
from porto_console.console.services.users import Credentials, issue_credentials, sync_user

DEMO_SEED = 1


def is_demo(ledger: LedgerOwner) -> bool:
    return ledger.genesis()["label"] == DEMO_LABEL


def load_scenario(ledger: LedgerOwner, seed: int = DEMO_SEED, *, evidence: EvidenceStore | None = None) -> int:
    """Journal the demo scenario into an empty demo ledger; returns how many commands that took.

    The scenario includes commands the ledger rejects on purpose (duplicates,
    conflicts), so an outcome may be a rejection. The evidence bytes it names
    that exist (its statement index's artifact, from which recipients' statement
    files are made) go into ``evidence`` first.
    """
    if not is_demo(ledger) or ledger.head().sequence != 0:
        return 0
    scenario = demo_scenario(seed)
    for data in scenario.evidence.values() if evidence is not None else ():
        evidence.put(data)
    futures = [ledger.submit_async(envelope) for envelope in scenario.envelopes]
    for future in futures:
        future.result()
    return len(futures)


def demo_users(ledger: LedgerOwner) -> list[tuple[Credentials, list[str]]]:
    """Every active demo staff account with a console role, as a user with fresh credentials."""
    issued = []
    for account in accounts(ledger, kind="staff", status="active"):
        roles = [role for role in account.roles if role in CONSOLE_ROLES]
        if roles:
            user, _ = sync_user(account.account_id, roles=roles, active=True, email=staff_email(account.account_id))
            issued.append((issue_credentials(user), roles))
    return issued
