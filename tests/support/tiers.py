"""How hard the property and state-machine tests try, per test tier (docs/adr/0043).

``make test`` runs every example; ``make test-fast`` sets ``PORTO_TEST_TIER=fast``
and each Hypothesis test tries a fifth of its examples (at least ten), so the
fast tier still exercises every property and machine, less deeply.
"""

from __future__ import annotations

import os

FAST = os.environ.get("PORTO_TEST_TIER") == "fast"


def examples(full: int) -> int:
    return max(10, full // 5) if FAST else full
