"""Deterministic envelope building for fixture scenarios: seeded IDs, a fixed clock."""

from __future__ import annotations

import hashlib
import random
import uuid
from typing import Iterable

from ledger_engine.adapters.signatures import key_from_seed
from ledger_engine.application.envelopes import build_envelope
from ledger_engine.domain.step_up import public_key_hex, with_proof
from ledger_engine.open_json import Unvalidated

# 2026-10-01T00:00:00Z: the demo period starts here, whatever today is.
DEMO_EPOCH_MS = 1_790_812_800_000
DAY_MS = 86_400_000
FIXTURE_PREFIX = "demo"
# The demo's own step-up key: its genesis trusts it, its approvals carry proofs signed by it, and the demo
# console signs with it. A fixture, labelled as one; a real ledger trusts its console's own key.
DEMO_STEP_UP_KEY = key_from_seed("fixture:demo-step-up-key")
DEMO_STEP_UP_PUBLIC_KEY = public_key_hex(DEMO_STEP_UP_KEY)
# The labelled demo's identity key, public like everything in the demo; a deployment's is its own secret.
DEMO_IDENTITY_KEY = b"fixture:demo-identity-key:public-to-everyone"


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
        self.envelopes: list[Unvalidated] = []
        # Evidence bytes the scenario names and a loader stores (the statement index's artifact), by SHA-256.
        self.evidence: dict[str, bytes] = {}

    def new_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def tick(self, milliseconds: int = 1_000) -> int:
        self.clock_ms += milliseconds
        return self.clock_ms

    def advance_to(self, timestamp_ms: int) -> None:
        self.clock_ms = max(self.clock_ms, timestamp_ms)

    def add(self, command_type: str, payload: Unvalidated, *, actor: str,
            expected: Iterable[Unvalidated] = (), evidence: Iterable[str] = (),
            step_up: bool = False) -> Unvalidated:
        """Append one envelope; ``step_up`` approves it with a proof from the demo's fixture step-up key."""
        envelope = build_envelope(command_type, payload, command_id=self.new_id(), actor_id=actor,
                                  admitted_at_ms=self.tick(), expected_revisions=expected,
                                  evidence_hashes=evidence)
        if step_up:
            envelope = with_proof(envelope, DEMO_STEP_UP_KEY)
        self.envelopes.append(envelope)
        return envelope
