"""Deterministic envelope building for fixture scenarios: seeded IDs, a fixed clock."""

from __future__ import annotations

import hashlib
import random
import uuid
from typing import Any, Iterable

from ledger_engine.application.envelopes import build_envelope

# 2026-10-01T00:00:00Z: the demo period starts here, whatever today is.
DEMO_EPOCH_MS = 1_790_812_800_000
DAY_MS = 86_400_000
FIXTURE_PREFIX = "demo"


def fixture_digest(*parts: object) -> str:
    """A stand-in evidence digest, visibly derived from fixture names."""
    return hashlib.sha256(("fixture:" + ":".join(str(p) for p in parts)).encode()).hexdigest()


def fixture_address(name: str) -> str:
    return "0x" + fixture_digest("address", name)


class DemoBuilder:
    """Collects envelopes in order; every ID comes from the seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock_ms = DEMO_EPOCH_MS
        self.envelopes: list[dict[str, Any]] = []

    def new_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def tick(self, milliseconds: int = 1_000) -> int:
        self.clock_ms += milliseconds
        return self.clock_ms

    def advance_to(self, timestamp_ms: int) -> None:
        self.clock_ms = max(self.clock_ms, timestamp_ms)

    def add(self, command_type: str, payload: dict[str, Any], *, actor: str,
            expected: Iterable[dict[str, Any]] = (), evidence: Iterable[str] = ()) -> dict[str, Any]:
        envelope = build_envelope(command_type, payload, command_id=self.new_id(), actor_id=actor,
                                  admitted_at_ms=self.tick(), expected_revisions=expected,
                                  evidence_hashes=evidence)
        self.envelopes.append(envelope)
        return envelope
