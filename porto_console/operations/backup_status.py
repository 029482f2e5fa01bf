"""The newest good backup, for health checks and scrapes that come every few seconds.

``newest_good_backup`` asks the restic repository, which may be across the
network, for its newest verified snapshot and keeps the answer for a few
seconds; a probe reads through that, and computes the age afresh each time.
"""

from __future__ import annotations

from dataclasses import dataclass

from porto_console.effects.backups import STALE_AFTER_MS, newest_good_backup


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


def backup_status() -> BackupStatus:
    newest = newest_good_backup()
    return BackupStatus(newest["sequence"], newest["created_at_ms"]) if newest else BackupStatus(None, None)
