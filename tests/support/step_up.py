"""Step-up proofs in tests: a labelled test key, a genesis that trusts it, and envelopes that carry a proof.

A test that submits a human-approval command (``ApprovePayoutRun``, an
``UpdateRecipient`` approval, a ``DecideStaffChange`` approval) builds its
envelope as usual and passes it through ``stepped_up``, or asks the envelope
factory for ``step_up=True``; its ledger must start from ``genesis()`` (or any
genesis with ``step_up_public_key=PUBLIC_KEY``).
"""

from __future__ import annotations

from typing import Any

from ledger_engine.adapters.signatures import key_from_seed
from ledger_engine.domain.step_up import public_key_hex, with_proof
from ledger_engine.genesis import default_genesis

PRIVATE_KEY = key_from_seed("porto:test:step-up-key:v1")  # a fixture key, for tests only
PUBLIC_KEY = public_key_hex(PRIVATE_KEY)
PRIVATE_KEY_HEX = PRIVATE_KEY.private_bytes_raw().hex()


def genesis(**options: Any) -> dict[str, Any]:
    """The default genesis, trusting the test step-up key."""
    return default_genesis(step_up_public_key=PUBLIC_KEY, **options)


def stepped_up(envelope: dict[str, Any], *, issued_at_ms: int | None = None) -> dict[str, Any]:
    """``envelope`` with a proof signed by the test key (issued at its admission time unless stated)."""
    return with_proof(envelope, PRIVATE_KEY, issued_at_ms=issued_at_ms)
