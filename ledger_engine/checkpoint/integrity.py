"""``verify``: a full check of a ledger database, not of an export.

Reads every key of every column family with block checksums on (so a damaged
data block anywhere is found, not only in what the last command happened to
read; a table's Bloom filter that fails its checksum is not: RocksDB drops it
and reads the checked data blocks instead, docs/adr/0071),
then exports the logical ledger into a scratch directory and verifies that
export: journal chain, every delta hash, the fold of the deltas into the state
rows and events, and the state digest. Finally the indexes must equal those
derived afresh from the logical state, and the stored journal tree, node for
node, the one the journal makes. The first bad item is named.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import orjson

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.adapters.files import replace_durably
from ledger_engine.application.journal_tree import NODE_PREFIX, empty_tree, is_kept, stage_append
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.canonical import canonical_bytes
from ledger_engine.open_json import Document, Report
from ledger_engine.storage.digest import logical_rows
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.form import VerificationError
from ledger_engine.checkpoint.verify import require_trusted_genesis, verify_export
from ledger_engine.errors import LedgerError
from ledger_engine.layout import ALL_FAMILIES, EVENTS, INDEXES, JOURNAL, META
from ledger_engine.projections.maintenance import IndexMaintainer
from ledger_engine.storage.rocks import RocksStore

VERIFIED_FILE = "PORTO-VERIFIED.json"


def verify_store(store: RocksStore, evidence: EvidenceStore | None = None) -> Report:
    """Verify a quiescent (stopped, or checkpointed) store, against ``evidence`` where given; raises naming the
    first bad item."""
    return verify_store_exporting(store, evidence)[0]


def verify_store_exporting(store: RocksStore, evidence: EvidenceStore | None = None
                           ) -> tuple[Report, Document]:
    """``verify_store``'s report, and the metadata (file hashes included) of the export it verified."""
    keys = {family: sum(1 for _ in store.scan(family)) for family in ALL_FAMILIES}
    scratch = Path(tempfile.mkdtemp(prefix="porto-verify-"))
    try:
        export_store(store, scratch / "export")
        metadata = verify_export(scratch / "export", evidence=evidence)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _verify_indexes(store)
    _verify_journal_tree(store)
    report = {"ok": True, "sequence": metadata["sequence"], "entry_hash": metadata["last_entry_hash"],
              "logical_state_hash": metadata["logical_state_hash"], "journal_tree": metadata["journal_tree"],
              "genesis_hash": metadata["genesis_hash"], "keys": keys}
    return report, metadata


def _verify_journal_tree(store: RocksStore) -> None:
    """The stored tree must be exactly the one the verified journal makes: every node, none missing or extra.

    The journal is read once and its tree rebuilt as it streams past, each node it completes compared with
    the stored row, so memory holds the frontier and one node. A ledger last written before the tree
    existed, or in another layout, has none yet; its owner builds it on opening.
    """
    if not is_kept(store):
        return
    built = 0

    def require_stored(family: str, key: bytes, value: bytes) -> None:
        nonlocal built
        built += 1
        stored = store.get(family, key)
        if stored != value:
            raise VerificationError(f"{family}/{key.decode()}", "is missing: the journal makes it" if stored is None
                                    else "is not the root of the journal entries under it")

    frontier = empty_tree()
    for _, raw in store.scan(JOURNAL):
        frontier = stage_append(require_stored, frontier, orjson.loads(raw)["entry_hash"])
    stored = sum(1 for _ in store.scan(META, NODE_PREFIX))
    if stored != built:  # each built node matched a stored row, so any further row is one the journal never made
        raise VerificationError(f"{META}/{NODE_PREFIX.decode()}",
                                f"holds {stored} nodes; the journal's {frontier.size} entries make {built}")


def _verify_indexes(store: RocksStore) -> None:
    expected = IndexMaintainer().rebuild(logical_rows(store), ((key.decode(), value) for key, value in store.scan(EVENTS)))
    for key, value in store.scan(INDEXES):
        if expected.pop(key, None) != value:
            raise VerificationError(f"{INDEXES}/{key.decode(errors='replace')}",
                                    "differs from the index the logical state derives")
    if expected:
        raise VerificationError(f"{INDEXES}/{min(expected).decode(errors='replace')}",
                                "is missing: the logical state derives it")


def verify_directory(data_dir: str | os.PathLike[str], *, trusted_genesis: str | None = None,
                     evidence: EvidenceStore | None = None) -> Report:
    """``porto-ledger verify``: a stopped ledger, opened read-only; the outcome is recorded beside it."""
    try:
        with RocksStore(data_dir, read_only=True, stopped=True) as store:
            report = verify_store(store, evidence)
        require_trusted_genesis(report["genesis_hash"], trusted_genesis, "genesis")
    except LedgerError as error:
        record_verification(data_dir, failure=error)
        raise
    record_verification(data_dir, report=report)
    return report


def verify_owner(owner: LedgerOwner) -> Report:
    """Verify a live owner's ledger on a checkpoint taken at a command boundary; damage halts admission."""
    try:
        report = owner.with_checkpoint(verify_store)
    except LedgerError as error:
        record_verification(owner.store.path, failure=error)
        owner.executor.halt(error)
        raise
    record_verification(owner.store.path, report=report)
    return report


def record_verification(data_dir: str | os.PathLike[str], *, report: Report | None = None,
                        failure: LedgerError | None = None) -> None:
    """When verify last ran, at which head, and what it found: a file beside the database files,
    never a write into a database that may be damaged."""
    if report is not None:
        assert failure is None, "a report or a failure, not both"
        found = {"ok": True, "sequence": report["sequence"], "entry_hash": report["entry_hash"]}
    else:
        assert failure is not None, "a report or a failure"
        found = {"ok": False, "code": str(failure.code), "detail": failure.detail}
    replace_durably(Path(data_dir) / VERIFIED_FILE,
                    canonical_bytes({"at_ms": time.time_ns() // 1_000_000, **found}) + b"\n")


def last_verification(data_dir: str | os.PathLike[str]) -> Report | None:
    try:
        recorded: Report = orjson.loads((Path(data_dir) / VERIFIED_FILE).read_bytes())
    except (FileNotFoundError, orjson.JSONDecodeError):
        return None
    return recorded
