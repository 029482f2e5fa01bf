"""How hard the property and state-machine tests try, per test tier (docs/adr/0043).

``make test`` runs every example; ``make test-fast`` sets ``PORTO_TEST_TIER=fast``
and each Hypothesis test tries a fifth of its examples (at least ten; twenty for
those that take Hypothesis's default), and each
exhaustive test tampers with a fifth of its cases, so the fast tier still
exercises every property and machine, less deeply.
"""

from __future__ import annotations

import os

from hypothesis import settings

FAST = os.environ.get("PORTO_TEST_TIER") == "fast"
# Hypothesis tests that name no example count take its default, 100: a fifth of it in the fast tier.
settings.register_profile("fast-tier", max_examples=20)
if FAST:
    settings.load_profile("fast-tier")


def examples(full: int) -> int:
    return max(10, full // 5) if FAST else full


def sampled(case: int) -> bool:
    """Whether an exhaustive test tampers with case number ``case``: every case in ``make test``, every fifth
    in the fast tier (each case is still proven and verified in both)."""
    return not FAST or case % 5 == 0
