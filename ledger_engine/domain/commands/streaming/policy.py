"""Time and eligibility parameters of the london-1 streaming rules.

Every duration a rule compares is measured against admission time, which the
envelope carries; node and provider times are evidence fields, never clocks.
"""

from __future__ import annotations

DAY_MS = 86_400_000

# IssueGrant routes only to a node whose last health observation is this recent.
HEALTH_FRESH_MS = 10 * 60_000
# A session lease reaches at most this far past the admission that renews it.
MAX_LEASE_MS = 30 * 60_000
# A grant expires at most this long after it is issued.
MAX_GRANT_TTL_MS = 5 * 60_000
# A closed session counts for royalties only with at least this much accepted listening.
MIN_ELIGIBLE_LISTEN_MS = 30_000


def day_of(timestamp_ms: int) -> int:
    """The UTC day number of a timestamp: whole days since the Unix epoch."""
    return timestamp_ms // DAY_MS


def day_start_ms(day: int) -> int:
    return day * DAY_MS
