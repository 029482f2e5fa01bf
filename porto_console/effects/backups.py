"""Backups that count, taken in the ledger owner's process, and the age of the newest good one.

A backup is the ledger's checkpoint and export with the admission gateway's
evidence and envelope stores, staged outside the data directory, encrypted
and stored by restic in ``PORTO_BACKUP_REPOSITORY`` (a local path by default,
``sftp:user@host:/path`` in deployment), and counted only once ``restic
check`` passes and the snapshot, restored, verifies (``offsite``).

One is taken when the console starts and whenever the newest good one is older
than ``PORTO_BACKUP_INTERVAL_SECS`` (240 s): the owner's keeper thread looks
every tick, and so does beat's ``porto.effects.backup``, so a missed backup is
caught up at the next look and a dead beat does not stop them.

This module runs in the owner's process (it opens a checkpoint of the
ledger); workers never import it.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.offsite import ResticRepository, newest_verified, stage_backup, upload_and_verify
from ledger_engine.errors import LedgerError
from ledger_engine.open_json import Report

log = logging.getLogger("porto.effects.backups")

STALE_AFTER_MS = 5 * 60 * 1000
NEWEST_CACHE_SECS = 15.0  # the dashboard asks often; the repository may be across the network

_taking = threading.RLock()  # one backup at a time in this process, and its due check with it
_newest: dict[str, tuple[float, Report | None]] = {}


def configured_repository(location: str | os.PathLike | None = None) -> ResticRepository:
    """The configured repository (or a local one at ``location``) with the configured password."""
    return ResticRepository(str(location or settings.BACKUP_REPOSITORY), backup_password(),
                            sftp_command=settings.BACKUP_SFTP_COMMAND, binary=settings.RESTIC_BINARY)


def backup_password() -> str:
    """``RESTIC_PASSWORD`` or ``RESTIC_PASSWORD_FILE``; the public demo password only for the labelled demo."""
    return settings.BACKUP_PASSWORD or settings.DEMO_BACKUP_PASSWORD


def take_backup(owner: LedgerOwner, admission_dir: str | os.PathLike,
                repository: ResticRepository | None = None) -> Report:
    """A backup that counts, of the live ledger and ``admission_dir``; returns its sequence, time and snapshot."""
    repository = repository or configured_repository()
    staging_root = Path(settings.BACKUP_STAGING_DIR)
    staging_root.mkdir(parents=True, exist_ok=True)
    with _taking:
        _clear(staging_root)
        stage = Path(tempfile.mkdtemp(prefix=f"{owner.head().sequence:020d}-", dir=staging_root))
        try:
            summary = stage_backup(owner.checkpoint, owner.path, Path(admission_dir), stage / "backup")
            taken = upload_and_verify(repository, stage / "backup", summary)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
    _newest[repository.location] = (time.monotonic(), _facts(taken))
    log.info("backup counted: sequence %s, snapshot %s in %s", taken["sequence"], taken["snapshot"], repository.name)
    return taken


def take_backup_if_due(owner: LedgerOwner, admission_dir: str | os.PathLike,
                       repository: ResticRepository | None = None) -> Report:
    """Take one now if the newest good backup is missing or older than the interval; what the newest is then.

    While another thread is taking one, a caller that can be told about a good backup is not kept waiting:
    beat's tick runs on a payment worker, which would otherwise stop paying for the length of a backup.
    """
    repository = repository or configured_repository()
    if not _taking.acquire(blocking=False):
        if (newest := newest_good_backup(repository)) is not None:
            return {"taken": False, **newest}
        _taking.acquire()
    try:
        newest = newest_good_backup(repository, fresh=True)
        if newest is not None and newest["age_ms"] < settings.BACKUP_INTERVAL_SECS * 1000:
            return {"taken": False, **newest}
        take_backup(owner, admission_dir, repository)
    finally:
        _taking.release()
    newest = newest_good_backup(repository)
    assert newest is not None  # the one just taken: ``take_backup`` left it in the cache
    return {"taken": True, **newest}


def newest_good_backup(repository: ResticRepository | str | os.PathLike | None = None, *, now_ms: int | None = None,
                       fresh: bool = False) -> Report | None:
    """What the console shows: the newest verified snapshot's sequence, age, and whether it is stale."""
    if not isinstance(repository, ResticRepository):
        repository = configured_repository(repository)
    checked_at, facts = _newest.get(repository.location, (None, None))
    if fresh or checked_at is None or time.monotonic() - checked_at > NEWEST_CACHE_SECS:
        try:
            facts = newest_verified(repository)
        except LedgerError as error:
            log.error("backup repository %s unreadable: %s", repository.name, error.detail)
            facts = None
        _newest[repository.location] = (time.monotonic(), facts)
    if facts is None:
        return None
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    age_ms = now_ms - facts["created_at_ms"]
    return {**facts, "age_ms": age_ms, "stale": age_ms > STALE_AFTER_MS}


def _clear(staging_root: Path) -> None:
    """What a killed backup left staged: only this process, the ledger's owner, stages here, one at a time."""
    for leftover in staging_root.iterdir():
        shutil.rmtree(leftover, ignore_errors=True)


def _facts(taken: Report) -> Report:
    return {"snapshot": taken["snapshot"], "sequence": taken["sequence"], "created_at_ms": taken["created_at_ms"]}


def start_keeper(owner: LedgerOwner, admission_dir: str | os.PathLike) -> threading.Event:
    """The owner's own backup schedule: one at start, then a look every tick, until the returned event is set."""
    stop = threading.Event()
    threading.Thread(target=_keep, args=(owner, admission_dir, stop), name="backup-keeper", daemon=True).start()
    return stop


def _keep(owner: LedgerOwner, admission_dir: str | os.PathLike, stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            take_backup_if_due(owner, admission_dir)
        except Exception:
            if stop.is_set():
                return  # the owner closed under the backup
            log.exception("backup failed; trying again in %s s", settings.BACKUP_TICK_SECS)
        stop.wait(settings.BACKUP_TICK_SECS)
