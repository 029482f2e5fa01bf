"""Durable files: the bytes are synced before the name appears, and the name before the call returns.

A sync costs about as much for one file as for many, so concurrent writers
share them, leader-follower, as the ledger's group commit shares one write
(docs/adr/0003): each wait returns only after a syncfs(2) of its filesystem
that began after the wait was asked for has finished.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

_LIBC = ctypes.CDLL(None, use_errno=True)


@contextmanager
def open_regular_file(path: Path) -> Iterator[BinaryIO]:
    """``path`` opened for reading, if it is a regular file; anything else (a link, a directory, a pipe)
    is an ``OSError``. It is opened without blocking and checked on the descriptor, so a pipe planted
    among files to verify never stalls the verification."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        yield handle


def read_regular_file(path: Path) -> bytes:
    with open_regular_file(path) as handle:
        return handle.read()


def sync_filesystem(directory: Path) -> None:
    """syncfs(2): flush the one filesystem holding ``directory``, not every filesystem on the host."""
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        if _LIBC.syncfs(descriptor) != 0:
            error = ctypes.get_errno()
            raise OSError(error, f"syncfs failed: {os.strerror(error)}")
    finally:
        os.close(descriptor)


class SharedSync:
    """One sync at a time of something written in order. A caller waits until its ``position`` is durable; whoever
    finds no sync running leads the next, for everything ``reached()`` counts as written when it starts, so callers
    that wait meanwhile share it, and a position already covered costs nothing."""

    def __init__(self, reached: Callable[[], int], synced: int = 0) -> None:
        self.changed = threading.Condition()
        self._reached = reached
        self._synced = synced
        self._syncing = False

    def through(self, position: int, sync: Callable[[], None]) -> None:
        with self.changed:
            while self._synced < position:
                if self._syncing:
                    self.changed.wait()
                    continue
                self._syncing, covering = True, self._reached()
                self.changed.release()
                try:
                    sync()
                finally:  # on failure too: a waiter must lead the next attempt, not wait forever
                    self.changed.acquire()
                    self._syncing = False
                    self.changed.notify_all()
                self._synced = max(self._synced, covering)  # still holding the lock, so waiters see it when they wake


class GroupSync:
    """One filesystem sync at a time; whoever waits when none runs leads the next for everyone waiting."""

    def __init__(self) -> None:
        self._requested = 0
        self._shared = SharedSync(lambda: self._requested)

    def wait_durable(self, directory: Path) -> None:
        """Return once everything written before this call to ``directory``'s filesystem is on disk."""
        with self._shared.changed:
            self._requested += 1
            ticket = self._requested
        self._shared.through(ticket, lambda: sync_filesystem(directory))


_groups: dict[int, GroupSync] = {}
_groups_lock = threading.Lock()


def _group_for(directory: Path) -> GroupSync:
    """The shared sync of the filesystem that holds ``directory``."""
    device = os.stat(directory).st_dev
    with _groups_lock:
        if device not in _groups:
            _groups[device] = GroupSync()
        return _groups[device]


def _publish_durably(path: Path, data: bytes, publish: Callable[[str, Path], bool]) -> bool:
    """Write ``data`` to a synced temporary file beside ``path``, let ``publish(temporary, path)`` name it,
    and sync again; returns what ``publish`` returned."""
    path.parent.mkdir(parents=True, exist_ok=True)
    filesystem = _group_for(path.parent)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        filesystem.wait_durable(path.parent)
        published = publish(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
    filesystem.wait_durable(path.parent)
    return published


def _link_unless_present(temporary: str, path: Path) -> bool:
    try:
        os.link(temporary, path)
        return True
    except FileExistsError:
        return False


def _replace(temporary: str, path: Path) -> bool:
    os.replace(temporary, path)
    return True


def create_durably(path: Path, data: bytes) -> bool:
    """Write ``data`` at ``path`` unless a file is already there; True if this call created it.

    Either way the file at ``path`` is on disk when this returns. A crash leaves
    no file or the whole one, never a part.
    """
    return _publish_durably(path, data, _link_unless_present)


def replace_durably(path: Path, data: bytes) -> None:
    """Put ``data`` at ``path`` in place of whatever is there; a crash leaves the old file or the new one."""
    _publish_durably(path, data, _replace)
