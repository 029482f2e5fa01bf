"""The genesis checkpoint: ruleset parameters and initial actor capabilities at sequence 0.

Replay starts here and must not invent different roles or balances, so the
genesis document is hashed and its hash is kept with every export.
"""

from __future__ import annotations

from typing import Any

from ledger_engine.canonical import GENESIS_DOMAIN, domain_hash
from ledger_engine.domain.ruleset import ASSETS, LONDON_1_POLICY, RULESET_VERSION, ROLES
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import key
from ledger_engine.layout import STATE

GENESIS_SCHEMA = 1


def default_genesis(*, admin_actor_id: str = "genesis-admin", label: str = "porto london ledger") -> dict[str, Any]:
    """A genesis with one bootstrap administrator, who provisions everyone else."""
    return {
        "schema_version": GENESIS_SCHEMA,
        "ruleset_version": RULESET_VERSION,
        "label": label,
        "assets": dict(ASSETS),
        "allocation_policy": dict(LONDON_1_POLICY),
        "actors": [{"actor_id": admin_actor_id, "roles": ["admin"]}],
    }


def genesis_hash(document: dict[str, Any]) -> str:
    return domain_hash(GENESIS_DOMAIN, document)


def genesis_records(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The logical records genesis creates, each at revision 1."""
    _validate(document)
    records = [(STATE, key("ruleset", document["ruleset_version"]), {
        "ruleset_version": document["ruleset_version"],
        "label": document["label"],
        "assets": document["assets"],
        "allocation_policy": document["allocation_policy"],
    })]
    for actor in document["actors"]:
        records.append((STATE, key("actor", actor["actor_id"]), {"roles": sorted(actor["roles"]), "status": "active"}))
    return records


def _validate(document: dict[str, Any]) -> None:
    if document.get("schema_version") != GENESIS_SCHEMA or document.get("ruleset_version") != RULESET_VERSION:
        raise LedgerError(ErrorCode.UNSUPPORTED_RULESET, "genesis names an unsupported schema or ruleset")
    if document.get("assets") != ASSETS:
        raise LedgerError(ErrorCode.VERIFICATION_FAILED, "genesis assets differ from the ruleset's")
    for actor in document.get("actors", []):
        if not set(actor["roles"]) <= ROLES:
            raise LedgerError(ErrorCode.VERIFICATION_FAILED, f"genesis actor {actor['actor_id']} has unknown roles")
