"""Verified backups off the data directory, and restore with dispatch disabled.

A backup is a physical RocksDB checkpoint (which keeps private_aux) beside a
portable export. It counts as good only once every file hash has been read
back and checked; the manifest is written last, so its presence means "good".
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

import orjson

from ledger_engine.application.owner import LedgerOwner, read_head
from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint.digest import logical_state_hash
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.verify import VerificationError, file_digest, verify_export
from ledger_engine.storage.rocks import RocksStore

BACKUP_FORMAT = "porto-london-backup/1"
MANIFEST = "MANIFEST.json"


def backup(take_checkpoint: Callable[[Path], None], data_dir: Path, destination: str | os.PathLike) -> dict[str, Any]:
    """Back up into ``destination`` via ``take_checkpoint`` (a live owner's or a stopped store's)."""
    dest = Path(destination).resolve()
    if dest.is_relative_to(Path(data_dir).resolve()):
        raise VerificationError(str(dest), "a backup must live outside the data directory")
    if dest.exists() and any(dest.iterdir()):
        raise VerificationError(str(dest), "backup destination is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    take_checkpoint(dest / "db")
    with RocksStore(dest / "db", read_only=True) as copy:
        head = read_head(copy)
        metadata = export_store(copy, dest / "export")
    manifest = {
        "format": BACKUP_FORMAT,
        "created_at_ms": int(time.time() * 1000),
        "sequence": head.sequence,
        "entry_hash": head.entry_hash,
        "logical_state_hash": metadata["logical_state_hash"],
        "db_files": _hash_tree(dest / "db"),
    }
    verify_export(dest / "export")
    _write_atomically(dest / MANIFEST, canonical_bytes(manifest) + b"\n")
    verify_backup(dest)
    return manifest


def backup_owner(owner: LedgerOwner, destination: str | os.PathLike) -> dict[str, Any]:
    return backup(owner.checkpoint, owner.store.path, destination)


def verify_backup(source: str | os.PathLike) -> dict[str, Any]:
    src = Path(source)
    try:
        manifest = orjson.loads((src / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        raise VerificationError(MANIFEST, "missing or unreadable: not a completed backup") from None
    if manifest.get("format") != BACKUP_FORMAT:
        raise VerificationError(MANIFEST, "unknown backup format")
    actual = _hash_tree(src / "db")
    for name, expected in manifest["db_files"].items():
        if actual.get(name) != expected:
            raise VerificationError(f"db/{name}", "file hash does not match the manifest")
    if set(actual) != set(manifest["db_files"]):
        raise VerificationError("db", "unexpected or missing files")
    metadata = verify_export(src / "export")
    if (metadata["sequence"], metadata["last_entry_hash"], metadata["logical_state_hash"]) != (
        manifest["sequence"], manifest["entry_hash"], manifest["logical_state_hash"]
    ):
        raise VerificationError(MANIFEST, "the manifest's head and state hash differ from the export's")
    return manifest


def restore(source: str | os.PathLike, data_dir: str | os.PathLike) -> dict[str, Any]:
    """Restore a verified backup into an empty ``data_dir`` with dispatch and signing disabled."""
    manifest = verify_backup(source)
    target = Path(data_dir)
    if target.exists() and any(target.iterdir()):
        raise VerificationError(str(target), "restore needs an empty data directory")
    shutil.copytree(Path(source) / "db", target, dirs_exist_ok=True)
    with LedgerOwner.open(target) as owner:
        state_hash = owner.at_boundary(logical_state_hash)
        head = owner.head()
        if (head.sequence, head.entry_hash, state_hash) != (
            manifest["sequence"], manifest["entry_hash"], manifest["logical_state_hash"]
        ):
            raise VerificationError(str(target), "restored ledger does not match the backup manifest")
        owner.set_dispatch(False, f"restored from backup at sequence {head.sequence}; reconcile before resuming")
    return {"sequence": head.sequence, "entry_hash": head.entry_hash, "logical_state_hash": state_hash,
            "dispatch_enabled": False}


def _hash_tree(root: Path) -> dict[str, dict[str, Any]]:
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            digest, size = file_digest(path)
            files[path.relative_to(root).as_posix()] = {"sha256": digest, "bytes": size}
    return files


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_suffix(".tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
