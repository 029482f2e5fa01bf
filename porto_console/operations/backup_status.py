"""The newest good backup, for health checks and scrapes that come every few seconds.

``newest_good_backup`` re-reads every file hash of a backup before it reports
one; a probe must not do that each time. The verified result is reused while
the backup root lists the same entries and for at most ``REVERIFY_AFTER_S``;
the age is always computed afresh.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from porto_console.effects.backups import STALE_AFTER_MS, newest_good_backup

REVERIFY_AFTER_S = 60.0


@dataclass(frozen=True, slots=True)
class BackupStatus:
    sequence: int | None
    created_at_ms: int | None

    def age_s(self, now_ms: int) -> float | None:
        return None if self.created_at_ms is None else (now_ms - self.created_at_ms) / 1000

    def overdue(self, now_ms: int, running_since_ms: int) -> bool:
        """No good backup within the limit; with none at all, once the process has run that long without one."""
        newest = self.created_at_ms if self.created_at_ms is not None else running_since_ms
        return now_ms - newest > STALE_AFTER_MS


_lock = threading.Lock()
_cached: tuple[tuple, float, BackupStatus] | None = None


def backup_status(root: Path) -> BackupStatus:
    global _cached
    listing = (str(root), tuple(sorted(entry.name for entry in root.iterdir())) if root.is_dir() else ())
    with _lock:
        if _cached is not None and _cached[0] == listing and time.monotonic() - _cached[1] < REVERIFY_AFTER_S:
            return _cached[2]
        newest = newest_good_backup(root)
        status = BackupStatus(newest["sequence"], newest["created_at_ms"]) if newest else BackupStatus(None, None)
        _cached = (listing, time.monotonic(), status)
        return status
