"""The labelled demo journalled into an empty demo ledger: what ``make run`` and ``porto-ledger init --demo`` share.

The scenario's evidence bytes (its statement index's artifact) go into the
admission directory's evidence store first, then its envelopes in order (some
are rejected on purpose: duplicates, conflicts).
"""

from __future__ import annotations

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo import demo_scenario

DEMO_SEED = 1


def load_demo(owner: LedgerOwner, evidence: EvidenceStore, seed: int = DEMO_SEED) -> int:
    """Journal the demo scenario of ``seed``; the head's sequence afterwards."""
    scenario = demo_scenario(seed)
    for data in scenario.evidence.values():
        evidence.put(data)
    for future in [owner.submit_async(envelope) for envelope in scenario.envelopes]:
        future.result()
    return owner.head().sequence
