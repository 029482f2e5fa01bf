"""Building envelopes. IDs and timestamps are chosen here, before admission, never by the rules."""

from __future__ import annotations

from typing import Iterable

from ledger_engine.domain.ruleset import RULESET_VERSION
from ledger_engine.envelope import ENVELOPE_SCHEMA_VERSION
from ledger_engine.open_json import Unvalidated


def build_envelope(
    command_type: str,
    payload: Unvalidated,
    *,
    command_id: str,
    actor_id: str,
    admitted_at_ms: int,
    expected_revisions: Iterable[Unvalidated] = (),
    evidence_hashes: Iterable[str] = (),
    ruleset_version: str = RULESET_VERSION,
) -> Unvalidated:
    return {
        "schema_version": ENVELOPE_SCHEMA_VERSION,
        "command_id": command_id,
        "command_type": command_type,
        "actor_id": actor_id,
        "admitted_at_ms": admitted_at_ms,
        "ruleset_version": ruleset_version,
        "expected_revisions": sorted(expected_revisions, key=lambda item: (item["cf"], item["key"])),
        "payload": payload,
        "evidence_hashes": sorted(set(evidence_hashes)),
    }
