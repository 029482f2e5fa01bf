"""Scheduled verified backups, run by the ledger owner's process, and the age of the newest good one.

Beat sends ``porto.effects.backup`` at least every four minutes; the
maintenance worker asks the owner (the internal API) to run
``take_backup``, which writes a verified backup into a new directory under
the backup root, outside the data directory. A backup counts only once
``verify_backup`` has re-read every file hash against its manifest, so
``newest_good_backup`` verifies again before it reports an age.

This module runs in the owner's process (it opens a checkpoint of the
ledger); workers never import it.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.backup import MANIFEST, backup_owner, verify_backup
from ledger_engine.checkpoint.verify import VerificationError
from ledger_engine.keys import seq20

STALE_AFTER_MS = 5 * 60 * 1000


def take_backup(owner: LedgerOwner, root: str | os.PathLike) -> dict[str, Any]:
    """A verified backup of the live ledger in a new ``root/<time>-<sequence>-<suffix>``; returns its manifest and path."""
    Path(root).mkdir(parents=True, exist_ok=True)
    stamp = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{seq20(owner.head().sequence)}-"
    destination = Path(tempfile.mkdtemp(prefix=stamp, dir=root))
    manifest = backup_owner(owner, destination)
    return {"path": str(destination), **manifest}


def newest_good_backup(root: str | os.PathLike, *, now_ms: int | None = None) -> dict[str, Any] | None:
    """What the console shows: the newest backup under ``root`` that verifies, its age, and whether it is stale."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    candidates = sorted((path for path in Path(root).glob(f"*/{MANIFEST}")), reverse=True) if Path(root).exists() else []
    for manifest_path in candidates:
        try:
            manifest = verify_backup(manifest_path.parent)
        except VerificationError:
            continue
        age_ms = now_ms - manifest["created_at_ms"]
        return {"path": str(manifest_path.parent), "sequence": manifest["sequence"],
                "created_at_ms": manifest["created_at_ms"], "age_ms": age_ms, "stale": age_ms > STALE_AFTER_MS}
    return None
