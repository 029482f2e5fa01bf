"""The test suite's checkpoint keys: the one the test settings sign with, and a stranger's under Porto's name.

Both are fixed, so the statement-file vectors (and their Ed25519 signatures, which are deterministic) are
the same on every run.
"""

from __future__ import annotations

import hashlib

from ledger_engine.merkle.checkpoint import CheckpointSigner

ORIGIN = "porto.test/statements"
SEED_HEX = hashlib.sha256(b"porto:test-only:checkpoint-key").hexdigest()
STRANGER_SEED_HEX = hashlib.sha256(b"porto:test-only:a-stranger's-checkpoint-key").hexdigest()


def signer() -> CheckpointSigner:
    return CheckpointSigner.from_seed_hex(ORIGIN, SEED_HEX)


def stranger() -> CheckpointSigner:
    """Another key that calls itself by Porto's name: its signatures must never verify as Porto's."""
    return CheckpointSigner.from_seed_hex(ORIGIN, STRANGER_SEED_HEX)
