"""The console's effect quarantine: the one store of parked effects its settings name, shared by every request."""

from __future__ import annotations

import functools
from pathlib import Path

from django.conf import settings

from porto_console.effects import stores
from porto_console.effects.journal_port import QuarantinePort


def quarantine() -> QuarantinePort:
    return _shared_quarantine(settings.QUARANTINE_DIR, settings.SIGNER_JOURNAL_URL)


@functools.cache
def _shared_quarantine(directory: Path, signer_journal_url: str | None) -> QuarantinePort:
    """One instance per setting, so a PostgreSQL quarantine keeps its connections between requests."""
    return stores.quarantine(directory, signer_journal_url)
