"""Verified backups off the data directory, and restore with dispatch disabled.

A backup is a physical RocksDB checkpoint (which keeps private_aux), its
files copies of the ledger's rather than hard links to them, beside a portable
export. It counts as good only once every file hash has been read back and
checked; the manifest is written last, so its presence means "good". The
manifest is the recovery record: head, state digest and the operational
writer generation of the ledger it came from.

A restore is all or nothing (docs/adr/0013): it builds the ledger in a
sibling scratch directory, verifies it (everything ``verify`` checks, and that
it exports exactly as the backup's export), and only then renames it into
place. A killed restore leaves no ledger at the target, or a verified one with
dispatch off. The ledger it builds is the backup's history re-executed through
the rules (docs/adr/0076, 0077): hashes show a history is whole, not that the
rules made it. Of the backed-up database it keeps only the private rows; its
first own write adds them, disables dispatch and raises the writer generation.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import orjson

from ledger_engine.adapters.files import read_regular_file, replace_durably
from ledger_engine.application.owner import (
    WRITER_KEY, LedgerOwner, read_writer_generation, reconciliation_owed, writer_record,
)
from ledger_engine.open_json import Document, Report
from ledger_engine.storage.head import read_head
from ledger_engine.application.private_rows import require_private_row
from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.form import VerificationError
from ledger_engine.checkpoint.integrity import verify_store_exporting
from ledger_engine.checkpoint.publish import publish_built
from ledger_engine.checkpoint.replay import rebuild_export
from ledger_engine.checkpoint.verify import hash_tree, require_fields, verify_export
from ledger_engine.errors import LedgerError
from ledger_engine.layout import META, PRIVATE_AUX
from ledger_engine.storage.rocks import RocksStore

BACKUP_FORMAT = "porto-london-backup/1"
MANIFEST = "MANIFEST.json"


def backup(take_checkpoint: Callable[[Path], None], data_dir: Path,
           destination: str | os.PathLike[str]) -> Document:
    """Back up into ``destination`` via ``take_checkpoint`` (a live owner's or a stopped store's)."""
    dest = Path(destination).resolve()
    if dest.is_relative_to(Path(data_dir).resolve()):
        raise VerificationError(str(dest), "a backup must live outside the data directory")
    if dest.exists() and any(dest.iterdir()):
        raise VerificationError(str(dest), "backup destination is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    take_checkpoint(dest / "db")
    _unshare_files(dest / "db")
    with RocksStore(dest / "db", read_only=True) as copy:
        head = read_head(copy)
        generation = read_writer_generation(copy)
        metadata = export_store(copy, dest / "export")
    manifest = {
        "format": BACKUP_FORMAT,
        "created_at_ms": time.time_ns() // 1_000_000,
        "sequence": head.sequence,
        "entry_hash": head.entry_hash,
        "logical_state_hash": metadata["logical_state_hash"],
        "journal_tree": metadata["journal_tree"],
        "writer_generation": generation,
        "db_files": hash_tree(dest / "db"),
    }
    # The export is read back and verified once, before the manifest that makes the backup count exists.
    _require_manifest_matches(manifest, verify_export(dest / "export"))
    replace_durably(dest / MANIFEST, canonical_bytes(manifest) + b"\n")
    return manifest


def _unshare_files(directory: Path) -> None:
    """Give the backup its own copy of every file the checkpoint hard-linked to the ledger's.

    A shared inode is one set of blocks: a damaged block, or a byte written into the backup, would be
    the ledger's too. The copies reach the disk with the rest of the backup: writing the manifest last
    (``replace_durably``) syncs the whole filesystem before the manifest's name appears.
    """
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.stat().st_nlink > 1:
            copy = path.with_name(f".{path.name}.copy")
            shutil.copy2(path, copy)
            os.replace(copy, path)


def backup_owner(owner: LedgerOwner, destination: str | os.PathLike[str]) -> Document:
    return backup(owner.checkpoint, owner.store.path, destination)


# What a restore reads from a manifest, by type; the writer generation and journal tree, which older
# manifests lack, are checked where they are read.
MANIFEST_FIELDS = {"created_at_ms": int, "sequence": int, "entry_hash": str, "logical_state_hash": str,
                   "db_files": dict}


def verify_backup(source: str | os.PathLike[str], *, trusted_genesis: str | None = None) -> Document:
    return _verified_backup(source, trusted_genesis)[0]


def _verified_backup(source: str | os.PathLike[str],
                     trusted_genesis: str | None) -> tuple[Document, Document]:
    """The manifest of the backup at ``source`` and the metadata of its export, both verified.

    The database is later required to export as this export does, so checking the export's
    genesis against ``trusted_genesis`` checks the database's too.
    """
    src = Path(source)
    try:
        manifest = orjson.loads(read_regular_file(src / MANIFEST))
    except (OSError, orjson.JSONDecodeError):
        raise VerificationError(MANIFEST, "missing or unreadable: not a completed backup") from None
    if not isinstance(manifest, dict) or manifest.get("format") != BACKUP_FORMAT:
        raise VerificationError(MANIFEST, "unknown backup format")
    require_fields(manifest, MANIFEST, MANIFEST_FIELDS)
    _require_generation(manifest.get("writer_generation", 0), MANIFEST)
    actual = hash_tree(src / "db")
    if not actual:
        raise VerificationError("db", "the backed-up database has no files")
    for name, expected in manifest["db_files"].items():
        if actual.get(name) != expected:
            raise VerificationError(f"db/{name}", "file hash does not match the manifest")
    if set(actual) != set(manifest["db_files"]):
        raise VerificationError("db", "unexpected or missing files")
    exported = verify_export(src / "export", trusted_genesis=trusted_genesis)
    _require_manifest_matches(manifest, exported)
    return manifest, exported


def _require_manifest_matches(manifest: Document, metadata: Document) -> None:
    """The manifest names the head, state digest and journal root of the verified export beside it."""
    if (metadata["sequence"], metadata["last_entry_hash"], metadata["logical_state_hash"]) != (
        manifest["sequence"], manifest["entry_hash"], manifest["logical_state_hash"]
    ):
        raise VerificationError(MANIFEST, "the manifest's head and state hash differ from the export's")
    if manifest.get("journal_tree", metadata["journal_tree"]) != metadata["journal_tree"]:
        raise VerificationError(MANIFEST, "the manifest's journal tree root differs from the export's journal")


def restore(source: str | os.PathLike[str], data_dir: str | os.PathLike[str], *,
            trusted_genesis: str | None = None) -> Report:
    """Restore a verified backup into an absent or empty ``data_dir``, all or nothing, dispatch disabled.

    The ledger published is the one the rules rebuild from the backup's export, never the backed-up
    database's files (docs/adr/0077); of those only the private rows, which no export holds, and the
    writer generation are kept.
    """
    return publish_built(data_dir, restorer(source, trusted_genesis=trusted_genesis), verb="restore",
                         doing="restoring")


def restorer(source: str | os.PathLike[str], *, trusted_genesis: str | None = None) -> Callable[[Path], Report]:
    """Verify the backup at ``source`` now; the function returned rebuilds it into a staging directory.

    For a caller that publishes the restored ledger itself, after what must stand before it (recovery's
    admission stores).
    """
    manifest, exported = _verified_backup(source, trusted_genesis)

    def build(staging: Path) -> Report:
        rebuild_export(Path(source) / "export", staging, trusted_genesis=trusted_genesis)
        backed_up = _backed_up_extras(Path(source) / "db", staging.parent)
        return _prepare_restored(staging, manifest, exported, backed_up)

    return build


@dataclass(frozen=True)
class BackedUp:
    """What a restore keeps of the backed-up database: what no export holds."""

    private_rows: list[tuple[bytes, bytes]]
    writer_generation: int


def _backed_up_extras(backed_up: Path, scratch_parent: Path) -> BackedUp:
    """Read from a scratch copy beside the staging ledger, since opening a database writes into it."""
    try:
        with tempfile.TemporaryDirectory(prefix=".backed-up-db-", dir=scratch_parent) as scratch:
            copy = Path(scratch) / "db"
            shutil.copytree(backed_up, copy, symlinks=True)
            with RocksStore(copy, read_only=True) as store:
                rows = list(store.scan(PRIVATE_AUX))
                writer = store.get(META, WRITER_KEY)
        for key, raw in rows:
            require_private_row(key, raw)
    except LedgerError as error:
        raise VerificationError("db", f"the backed-up database's private rows do not verify: {error.detail}") from None
    try:
        generation = orjson.loads(writer)["generation"] if writer is not None else 0
    except (orjson.JSONDecodeError, KeyError, TypeError):
        generation = None
    return BackedUp(rows, _require_generation(generation, "db"))


# Every writer's open stores its generation plus one as a JSON safe integer (at most 2**53 - 1); a
# generation restored above this bound would leave a ledger few or no writers could open.
MAX_RESTORED_GENERATION = 2**52


def _require_generation(generation: Any, item: str) -> int:
    if type(generation) is not int or not 0 <= generation < MAX_RESTORED_GENERATION:
        raise VerificationError(item, "the writer generation is not a count")
    return generation


def _prepare_restored(staging: Path, manifest: Document, exported: Document,
                      backed_up: BackedUp) -> Report:
    """One batch: dispatch off, the next writer generation and the private rows; then verify against the backup."""
    with RocksStore(staging) as store:
        head = read_head(store)
        generation = max(read_writer_generation(store), backed_up.writer_generation,
                         manifest.get("writer_generation", 0)) + 1
        reason = f"restored from backup at sequence {head.sequence}; reconcile before resuming"
        store.write([reconciliation_owed(reason),
                     (META, WRITER_KEY, writer_record(generation, f"restored from backup at sequence {head.sequence}")),
                     *((PRIVATE_AUX, key, raw) for key, raw in backed_up.private_rows)])
        restored = _verified_database(store)
    _require_restored_is_exported(staging, restored, manifest, exported)
    return {"sequence": restored["sequence"], "entry_hash": restored["last_entry_hash"],
            "logical_state_hash": restored["logical_state_hash"], "genesis_hash": restored["genesis_hash"],
            "dispatch_enabled": False, "writer_generation": generation}


def _verified_database(store: RocksStore) -> Document:
    """The metadata of the restored database's export, once the database passes ``verify`` whole.

    The manifest's file hashes are unsigned: whoever can write the backup can rewrite them, so the
    database is trusted only as far as it verifies. Whatever it fails on is the backup's fault.
    """
    try:
        return verify_store_exporting(store)[1]
    except LedgerError as error:
        raise VerificationError("db", f"the backed-up database does not verify: {error.detail}") from None


def _require_restored_is_exported(staging: Path, restored: Document, manifest: Document,
                                  exported: Document) -> None:
    """The restored database exports, file for file, as the backup's verified export, at the manifest's head."""
    if (restored["sequence"], restored["last_entry_hash"], restored["logical_state_hash"]) != (
        manifest["sequence"], manifest["entry_hash"], manifest["logical_state_hash"]
    ) or restored["journal_tree"] != manifest.get("journal_tree", exported["journal_tree"]):
        raise VerificationError(str(staging), "restored ledger does not match the backup manifest")
    if restored["files"] != exported["files"]:
        raise VerificationError(str(staging), "restored ledger does not export as the backup's export")
