"""The genesis checkpoint: ruleset parameters and initial actor capabilities at sequence 0.

Replay starts here and must not invent different roles or balances, so the
genesis document is hashed and its hash is kept with every export.
"""

from __future__ import annotations

import re
from typing import Any

from ledger_engine.canonical import GENESIS_DOMAIN, domain_hash
from ledger_engine.domain.actors import LEDGER_OWNER, STAFF_ROLES, WORKER_ROLES, role_conflict
from ledger_engine.domain.payer import ADDRESS_PATTERN, PAYER_KEY, payer_record
from ledger_engine.domain.step_up import PUBLIC_KEY_PATTERN, VERIFIER_KEY, verifier_record
from ledger_engine.domain.ruleset import ASSETS, LONDON_1_POLICY, RULESET_VERSION, ROLES
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import key
from ledger_engine.layout import STATE
from ledger_engine.open_json import Document, RecordData

GENESIS_SCHEMA = 1
GENESIS_HASH_PATTERN = "[0-9a-f]{64}"


def default_genesis(*, admin_actor_id: str = "genesis-admin", label: str = "porto london ledger",
                    step_up_public_key: str | None = None, payer_address: str | None = None) -> Document:
    """A genesis with one bootstrap administrator, who provisions everyone else.

    ``step_up_public_key`` is the verifier of the console's step-up proofs; without
    it, nothing that needs a person's step-up can be approved until two admins
    register one. ``payer_address`` is the chain address every payment is sent
    from (``domain/payer.py``); without it, the ledger checks no sender until two
    admins set one.
    """
    document = {
        "schema_version": GENESIS_SCHEMA,
        "ruleset_version": RULESET_VERSION,
        "label": label,
        "assets": dict(ASSETS),
        "allocation_policy": dict(LONDON_1_POLICY),
        "actors": [{"actor_id": admin_actor_id, "roles": ["admin"]}],
    }
    if step_up_public_key is not None:
        document["step_up_verifier"] = verifier_record(step_up_public_key)
    if payer_address is not None:
        document["payer_address"] = payer_address
    return document


def genesis_hash(document: Document) -> str:
    return domain_hash(GENESIS_DOMAIN, document)


def genesis_records(document: Document) -> list[tuple[str, str, RecordData]]:
    """The logical records genesis creates, each at revision 1."""
    validate_genesis(document)
    records = [(STATE, key("ruleset", document["ruleset_version"]), {
        "ruleset_version": document["ruleset_version"],
        "label": document["label"],
        "assets": document["assets"],
        "allocation_policy": document["allocation_policy"],
    })]
    for actor in document["actors"]:
        records.append((STATE, key("actor", actor["actor_id"]), {"roles": sorted(actor["roles"]), "status": "active"}))
    if "step_up_verifier" in document:
        records.append((STATE, VERIFIER_KEY, verifier_record(document["step_up_verifier"]["public_key"])))
    if "payer_address" in document:
        records.append((STATE, PAYER_KEY, payer_record(document["payer_address"])))
    return records


def validate_genesis(document: Any) -> None:
    """Refuse a document that is not a genesis this ruleset can start from, with a stable code."""
    if not isinstance(document, dict):
        raise LedgerError(ErrorCode.VERIFICATION_FAILED, "genesis is not a JSON object")
    if type(document.get("schema_version")) is not int or document.get("schema_version") != GENESIS_SCHEMA \
            or document.get("ruleset_version") != RULESET_VERSION:
        raise LedgerError(ErrorCode.UNSUPPORTED_RULESET, "genesis names an unsupported schema or ruleset")
    if document.get("assets") != ASSETS:
        raise LedgerError(ErrorCode.VERIFICATION_FAILED, "genesis assets differ from the ruleset's")
    for name, kind in (("label", str), ("allocation_policy", dict), ("actors", list)):
        if not isinstance(document.get(name), kind):
            raise LedgerError(ErrorCode.VERIFICATION_FAILED, f"genesis {name} is missing or not a {kind.__name__}")
    _require_actors(document["actors"])
    if "step_up_verifier" in document and not _is_verifier(document["step_up_verifier"]):
        raise LedgerError(ErrorCode.VERIFICATION_FAILED, "genesis step_up_verifier is not one Ed25519 public key")
    if "payer_address" in document and not _is_address(document["payer_address"]):
        raise LedgerError(ErrorCode.VERIFICATION_FAILED, "genesis payer_address is not a chain address (0x, 64 hex)")


def _require_actors(actors: list[Any]) -> None:
    """Each an actor ID, once, with roles of this ruleset: a person's or a worker's, never both, and no two duties
    kept apart (``actors.CONFLICTING_ROLES``). None is the ledger's own actor, which no record names."""
    for actor in actors:
        if not (isinstance(actor, dict) and isinstance(actor.get("actor_id"), str)
                and isinstance(actor.get("roles"), list) and all(isinstance(role, str) for role in actor["roles"])):
            raise LedgerError(ErrorCode.VERIFICATION_FAILED, "a genesis actor is not an actor_id with a list of roles")
        if actor["actor_id"] == LEDGER_OWNER:
            raise LedgerError(ErrorCode.VERIFICATION_FAILED, f"{LEDGER_OWNER} is the ledger's own actor, not a genesis one")
        if not set(actor["roles"]) <= ROLES:
            raise LedgerError(ErrorCode.VERIFICATION_FAILED, f"genesis actor {actor['actor_id']} has unknown roles")
        if set(actor["roles"]) & STAFF_ROLES and set(actor["roles"]) & WORKER_ROLES:
            raise LedgerError(ErrorCode.VERIFICATION_FAILED,
                              f"genesis actor {actor['actor_id']} holds a person's roles and a worker's")
        conflict = role_conflict(actor["roles"])
        if conflict is not None:
            raise LedgerError(ErrorCode.ROLE_CONFLICT,
                              f"genesis actor {actor['actor_id']} holds {' and '.join(sorted(conflict))} together")
    actor_ids = [actor["actor_id"] for actor in actors]
    if len(set(actor_ids)) != len(actor_ids):
        raise LedgerError(ErrorCode.VERIFICATION_FAILED, "genesis names an actor twice")


def _is_verifier(verifier: Any) -> bool:
    return (isinstance(verifier, dict) and set(verifier) == {"public_key"} and isinstance(verifier["public_key"], str)
            and re.fullmatch(PUBLIC_KEY_PATTERN, verifier["public_key"]) is not None)


def _is_address(address: Any) -> bool:
    return isinstance(address, str) and re.fullmatch(ADDRESS_PATTERN, address) is not None
