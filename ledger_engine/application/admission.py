"""Admission: from a decoded document to a command the executor can apply.

Everything here is refused before admission with a stable code, so nothing is
journalled: malformed envelopes, unknown fields, types and rulesets, invalid
amounts, oversized envelopes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger_engine.domain.registry import CommandSpec, Payload, spec_for
from ledger_engine.domain.ruleset import require_supported
from ledger_engine.envelope import CommandEnvelope, envelope_hash, parse_envelope


@dataclass(frozen=True, slots=True)
class AdmittedCommand:
    envelope: CommandEnvelope
    canonical: bytes
    envelope_hash: str
    spec: CommandSpec
    payload: Payload

    @property
    def command_id(self) -> str:
        return self.envelope.command_id


def admit(document: Any) -> AdmittedCommand:
    envelope, canonical = parse_envelope(document)
    require_supported(envelope.ruleset_version)
    spec = spec_for(envelope.command_type)
    payload = spec.parse_payload(envelope.payload)
    return AdmittedCommand(envelope, canonical, envelope_hash(canonical), spec, payload)
