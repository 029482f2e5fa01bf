"""The owner's clock: how far ahead of it a command may be dated (docs/adr/0093).

Admission time may not run backwards across the ledger (docs/adr/0012), so a
command dated far ahead would freeze it: every honest command after it would
be refused as regressed. And a rule that reads the ledger's time (an
attempt's expiry, a lease, a step-up proof's age) would believe whatever its
submitter chose. So the owner refuses, unjournalled and with nothing changed,
any new command dated more than ``max_ahead_ms`` ahead of its own clock,
whoever built the envelope: the gateway, the internal API, ``porto-ledger
submit`` or a caller of ``LedgerOwner.submit``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Mapping

from ledger_engine.environment import ADMISSION_SKEW_MS, read_engine_environment


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class AdmissionClock:
    now_ms: Callable[[], int] | None = None  # the wall clock, looked up when read
    max_ahead_ms: int = ADMISSION_SKEW_MS

    @classmethod
    def configured(cls, environ: Mapping[str, str] | None = None) -> "AdmissionClock":
        """The wall clock, with the skew ``PORTO_ADMISSION_SKEW_MS`` sets (5 s when unset) in ``environ``, or
        in this process's environment; a malformed one is refused (``EnvironmentRefused``, a ValueError)."""
        return cls(max_ahead_ms=read_engine_environment(environ).admission_skew_ms)

    def ceiling_ms(self) -> int:
        """No new command may be dated after this time."""
        return (self.now_ms or wall_clock_ms)() + self.max_ahead_ms
