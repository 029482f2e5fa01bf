"""Loading a verified portable checkpoint into an empty staging directory.

The checkpoint's rows, events and journal become the new ledger's history and
state; indexes are rebuilt from them and dispatch starts disabled. Loading
proves only that the export is self-consistent: provenance comes from the
operator choosing a trusted export, and from replaying a later export's
journal suffix on top and arriving at that export's state hash. The directory
is a replay's staging directory: its batches are not synced one by one, since
``publish_built`` syncs every file before the ledger gets its name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

import orjson

from ledger_engine.open_json import Document
from ledger_engine.storage.head import HEAD_KEY, Head
from ledger_engine.application.journal_tree import build_from_journal
from ledger_engine.application.owner import GENESIS_KEY, reconciliation_owed
from ledger_engine.storage.value_codec import encode_value
from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint.form import (
    DELTAS_FILE, EVENTS_FILE, GENESIS_FILE, JOURNAL_FILE, ROWS_FILE, VerificationError,
)
from ledger_engine.checkpoint.verify import verify_export
from ledger_engine.genesis import genesis_hash
from ledger_engine.keys import seq20
from ledger_engine.layout import DELTAS, EVENTS, JOURNAL, META
from ledger_engine.ordered import chunks
from ledger_engine.projections.rebuild import rebuild_indexes
from ledger_engine.storage.rocks import RocksStore, WriteOp

CHUNK = 10_000


def load_checkpoint(export_dir: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> Head:
    root = Path(export_dir)
    metadata = verify_export(root)
    genesis = orjson.loads((root / GENESIS_FILE).read_bytes())
    with RocksStore(data_dir, create=True, staging=True) as store:
        if store.get(META, HEAD_KEY) is not None:
            raise VerificationError(str(data_dir), "loading a checkpoint needs an empty data directory")
        for chunk in chunks(_history_ops(root), CHUNK):
            store.write(chunk)
        rebuild_indexes(store)
        head = Head(metadata["sequence"], metadata["last_entry_hash"])
        if build_from_journal(store, head).root().hex() != metadata["journal_tree"]["root"]:
            raise VerificationError(str(data_dir), "the loaded journal's tree root differs from the checkpoint's")
        # The head goes last: a load interrupted before this line leaves no initialised ledger.
        store.write([
            (META, GENESIS_KEY, encode_value({"document": genesis, "genesis_hash": genesis_hash(genesis)})),
            reconciliation_owed("loaded from a checkpoint; reconcile first"),
            (META, HEAD_KEY, encode_value(head.as_json())),
        ])
    return head


def _history_ops(root: Path) -> Iterator[WriteOp]:
    for row in _read_lines(root / ROWS_FILE):
        yield row["column_family"], row["key"].encode(), canonical_bytes(row["value"])
    for row in _read_lines(root / EVENTS_FILE):
        yield EVENTS, row["key"].encode(), canonical_bytes(row["value"])
    for row in _read_lines(root / DELTAS_FILE):
        yield DELTAS, seq20(row["sequence"]).encode(), canonical_bytes(row["delta"])
    with open(root / JOURNAL_FILE, "rb") as handle:
        for line in handle:
            entry = line.rstrip(b"\n")
            yield JOURNAL, seq20(orjson.loads(entry)["sequence"]).encode(), entry


def _read_lines(path: Path) -> Iterator[Document]:
    with open(path, "rb") as handle:
        for line in handle:
            yield orjson.loads(line)
