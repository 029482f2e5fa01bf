"""Durable files: the bytes are synced before the name appears, and the name before the call returns.

A sync costs about as much for one file as for many, so concurrent writers
share them, leader-follower, as the ledger's group commit shares one write
(docs/adr/0003): each wait returns only after a filesystem sync that began
after the wait was asked for has finished.
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path


class GroupSync:
    """One filesystem sync at a time; whoever waits when none runs leads the next for everyone waiting."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._requested = 0
        self._covered = 0
        self._syncing = False

    def wait_durable(self) -> None:
        """Return once everything written before this call is on disk."""
        with self._changed:
            self._requested += 1
            ticket = self._requested
            while self._covered < ticket:
                if self._syncing:
                    self._changed.wait()
                    continue
                self._syncing = True
                covering = self._requested
                self._changed.release()
                try:
                    os.sync()  # no syncfs in Python: sync(2) flushes every filesystem, ours included
                finally:
                    self._changed.acquire()
                    self._syncing = False
                self._covered = covering
                self._changed.notify_all()


FILESYSTEM = GroupSync()


def create_durably(path: Path, data: bytes) -> bool:
    """Write ``data`` at ``path`` unless a file is already there; True if this call created it.

    Either way the file at ``path`` is on disk when this returns. A crash leaves
    no file or the whole one, never a part.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        FILESYSTEM.wait_durable()
        try:
            os.link(temporary, path)
            created = True
        except FileExistsError:
            created = False
    finally:
        os.unlink(temporary)
    FILESYSTEM.wait_durable()
    return created
