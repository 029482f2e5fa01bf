"""A ledger built beside its data directory and published under its name only once it is whole.

Restore, replay and recovery's admission stores all build into a hidden sibling directory, sync
every file, and rename it into place: a crash leaves either no ledger at the target or the whole verified one, and what a killed
build left behind is a hidden directory that never stands in the way of the next attempt.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from ledger_engine.adapters.files import sync_filesystem
from ledger_engine.checkpoint.form import VerificationError

Built = TypeVar("Built")


def publish_built(data_dir: str | os.PathLike[str], build: Callable[[Path], Built], *, verb: str, doing: str) -> Built:
    """``build(staging)`` into a sibling of the absent or empty ``data_dir``, then rename it into place.

    ``verb`` names the operation in the refusal ("restore needs an empty data directory"), ``doing`` the
    hidden staging directory (``.NAME.restoring-*``).
    """
    with staged_beside(data_dir, verb=verb, doing=doing) as staging:
        built = build(staging)
        publish(staging, data_dir)
    return built


@contextmanager
def staged_beside(data_dir: str | os.PathLike[str], *, verb: str, doing: str) -> Iterator[Path]:
    """A hidden staging directory beside the absent or empty ``data_dir``, removed unless ``publish`` named it."""
    target = Path(data_dir).resolve()
    require_absent_or_empty(target, f"{verb} needs an empty data directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.{doing}-", dir=target.parent))
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # nothing is left there once it is published


def require_absent_or_empty(target: Path, reason: str) -> None:
    """Refuse a ``target`` that holds anything, or is anything but a directory."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise VerificationError(str(target), reason)


def publish(staging: Path, data_dir: str | os.PathLike[str]) -> None:
    """Every file of ``staging`` on disk, then its new name: the absent or empty ``data_dir``."""
    target = Path(data_dir).resolve()
    sync_tree(staging)
    staging.rename(target)  # an empty target directory is replaced; a non-empty one refuses
    sync_filesystem(target.parent)


def sync_tree(root: Path) -> None:
    """Every file under ``root`` on disk before its name is published."""
    for path in root.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())
    sync_filesystem(root)
