"""Replay: rebuild a ledger from an export's genesis and journal, checking every hash.

Replay applies each journalled envelope through the same admission and rules as
live commands and compares the entry hash it produces with the recorded one,
which covers the outcome, the result and the delta hash. It streams: the
journal is read a line at a time and applied in chunks of ``CHUNK`` commands,
each chunk one WriteBatch, so memory does not grow with the journal. The
batches are not synced one by one: the ledger is built in a staging directory
that is synced file by file once, before it is published (docs/adr/0068).
Once the journal is applied, the rebuilt ledger must export to exactly
the exported bytes, compared line by line as both stream past: journal,
deltas, events and state rows, hence the chain, every delta, the state digest
and the journal tree root. It dispatches nothing: the rebuilt ledger starts
with dispatch disabled. Before an accepted ``FreezeDayChunk`` is applied, its
chunk is split again from the state replayed so far and must be the one its
payload states (``frozen_chunks.py``), runs of them on every core; an accepted
correction of a frozen listener-day must quote a line of its chunk's bytes,
and, with the evidence store, an accepted statement index's day lines must
commit to the parts their chunks' stored bytes make (``statement_parts.py``).

Like a restore (docs/adr/0013), a replay is all or nothing: it builds the
ledger in a sibling scratch directory and renames it into place only once it
verified, so a killed replay leaves no ledger at the target, or a verified one.
"""

from __future__ import annotations

import os
from itertools import zip_longest
from pathlib import Path
from typing import Iterable

import orjson

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.admission import admit
from ledger_engine.open_json import Document, Report
from ledger_engine.storage.head import Head
from ledger_engine.application.journal_tree import BatchTree, open_tree, stored_root
from ledger_engine.application.owner import (
    WRITER_KEY, initialise, last_admitted_ms, read_writer_generation, reconciliation_owed, writer_record,
)
from ledger_engine.storage.head import read_head
from ledger_engine.application.pending import PendingBatch
from ledger_engine.application.transition import execute
from ledger_engine.checkpoint.export import (
    JournalTreeFold, StateDigest, delta_lines, event_lines, journal_lines, state_row_lines,
)
from ledger_engine.checkpoint.form import (
    DELTAS_FILE, EVENTS_FILE, JOURNAL_FILE, ROWS_FILE, VerificationError, verify_file_hashes,
)
from ledger_engine.checkpoint.frozen_chunks import FrozenChunkCheck, chunk_runs, frozen_chunk, quoted_lines
from ledger_engine.checkpoint.load import load_checkpoint
from ledger_engine.checkpoint.publish import publish_built
from ledger_engine.checkpoint.statement_parts import require_committed_parts
from ledger_engine.checkpoint.verify import read_metadata, verify_export, verify_genesis
from ledger_engine.errors import LedgerError, StorageFault
from ledger_engine.layout import META
from ledger_engine.merkle.journal import JournalFrontier
from ledger_engine.projections.maintenance import IndexMaintainer
from ledger_engine.storage.rocks import RocksStore

# Commands per batch. Rules scan the chunk's pending writes, so a larger chunk costs more per command.
CHUNK = 64


def replay_export(export_dir: str | os.PathLike[str], data_dir: str | os.PathLike[str], *,
                  checkpoint_dir: str | os.PathLike[str] | None = None,
                  trusted_genesis: str | None = None, evidence: EvidenceStore | None = None) -> Report:
    """Rebuild ``export_dir``'s ledger from its genesis, or from an earlier verified checkpoint of it.

    With ``trusted_genesis`` that genesis must be the one the deployment trusts (``require_trusted_genesis``);
    with ``evidence``, a frozen chunk's bytes it holds must hash to the chunk's hash, and a statement index whose
    artifact it holds must commit each day line to the parts recomputed from it.
    """
    return publish_built(data_dir, lambda staging: rebuild_export(export_dir, staging, checkpoint_dir=checkpoint_dir,
                                                                  trusted_genesis=trusted_genesis, evidence=evidence),
                         verb="replay", doing="replaying")


def rebuild_export(export_dir: str | os.PathLike[str], staging: Path, *,
                   checkpoint_dir: str | os.PathLike[str] | None = None, trusted_genesis: str | None = None,
                   evidence: EvidenceStore | None = None) -> Report:
    """Rebuild ``export_dir``'s ledger in ``staging``, a directory its caller publishes or throws away.

    Hashes prove only that a history is whole; whoever writes one can recompute them after adding an
    entry the rules would refuse. Re-executing it proves the rules made it.
    """
    root = Path(export_dir)
    metadata = read_metadata(root)
    verify_file_hashes(root, metadata)
    genesis = verify_genesis(root, metadata, trusted_genesis)
    with FrozenChunkCheck(evidence=evidence, quoted=quoted_lines(root / JOURNAL_FILE)) as check:
        return _rebuild(root, staging, metadata, genesis, checkpoint_dir, check)


def _rebuild(root: Path, staging: Path, metadata: Document, genesis: Document,
             checkpoint_dir: str | os.PathLike[str] | None, check: FrozenChunkCheck) -> Report:
    start = 0 if checkpoint_dir is None else _load_earlier_checkpoint(checkpoint_dir, staging, metadata, root)
    with RocksStore(staging, create=True, staging=True) as store:
        if start == 0:
            initialise(store, genesis)
        _disable_dispatch(store)
        head = _apply_journal(store, root / JOURNAL_FILE, read_head(store), after=start, check=check)
        return _compare_with_export(store, root, metadata, head)


def _disable_dispatch(store: RocksStore) -> None:
    generation = read_writer_generation(store) + 1
    store.write([reconciliation_owed("rebuilt by replay; reconcile before dispatching"),
                 (META, WRITER_KEY, writer_record(generation, "rebuilt by replay"))])


def _load_earlier_checkpoint(checkpoint_dir: str | os.PathLike[str], data_dir: str | os.PathLike[str],
                             metadata: Document, root: Path) -> int:
    """Load a checkpoint whose head lies on ``root``'s journal; returns its sequence."""
    checkpoint = verify_export(checkpoint_dir)
    if checkpoint["genesis_hash"] != metadata["genesis_hash"] or checkpoint["sequence"] > metadata["sequence"]:
        raise VerificationError(str(checkpoint_dir), "checkpoint is not an earlier state of this ledger")
    if checkpoint["sequence"] and _entry_hash_at(root / JOURNAL_FILE, checkpoint["sequence"]) != checkpoint["last_entry_hash"]:
        raise VerificationError(str(checkpoint_dir), "checkpoint head is not on this journal")
    return load_checkpoint(checkpoint_dir, data_dir).sequence


def _entry_hash_at(journal_path: Path, sequence: int) -> str | None:
    with open(journal_path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if number == sequence:
                entry_hash: str = _journal_entry(number, line)["entry_hash"]
                return entry_hash
    return None


class _Chunk:
    """The commands replayed since the last batch, and the journal tree they grow, as the executor's groups do."""

    def __init__(self, store: RocksStore, frontier: JournalFrontier) -> None:
        self.store = store
        self.tree = BatchTree(frontier)
        self.pending = PendingBatch(store)
        self.commands = 0

    def write(self) -> None:
        if self.commands:
            self.tree.grow(self.pending.put)
            self.store.write(self.pending.ops())
        self.pending = PendingBatch(self.store)
        self.commands = 0


def _apply_journal(store: RocksStore, journal_path: Path, head: Head, *, after: int,
                   check: FrozenChunkCheck) -> Head:
    chunk = _Chunk(store, open_tree(store, head))
    indexes = IndexMaintainer()
    floor = last_admitted_ms(store, head)
    with open(journal_path, "rb") as handle:
        entries = ((number, _journal_entry(number, line)) for number, line in enumerate(handle, start=1)
                   if number > after)
        for run in chunk_runs(entries, lambda numbered: frozen_chunk(f"{JOURNAL_FILE}:{numbered[0]}", numbered[1])):
            for number, entry in check.each_checked(chunk.pending, run):
                check.require_quote(f"{JOURNAL_FILE}:{number}", entry)
                require_committed_parts(check.evidence, chunk.pending, f"{JOURNAL_FILE}:{number}", entry)
                head, admitted_ms = _replay_one(chunk, indexes, head, floor, number, entry)
                floor = max(floor, admitted_ms)
                if chunk.commands >= CHUNK:
                    chunk.write()
    chunk.write()
    return head


def _journal_entry(number: int, line: bytes) -> Document:
    try:
        entry = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise VerificationError(f"{JOURNAL_FILE}:{number}", "not valid JSON") from None
    if not isinstance(entry, dict) or not isinstance(entry.get("entry_hash"), str) or "envelope" not in entry:
        raise VerificationError(f"{JOURNAL_FILE}:{number}", "not a journal entry")
    return entry


def _replay_one(chunk: _Chunk, indexes: IndexMaintainer, head: Head, floor: int, number: int,
                entry: Document) -> tuple[Head, int]:
    """Apply one journalled envelope after ``head``; it must make exactly the recorded entry."""
    item = f"{JOURNAL_FILE}:{number}"
    try:
        command = admit(entry["envelope"])
        chunk.tree.check_claim(command.payload, chunk.pending.put, chunk.pending.get_raw)
        outcome, head = execute(command, chunk.pending, head, indexes, admitted_floor_ms=floor)
    except StorageFault:
        raise
    except LedgerError as error:
        raise VerificationError(item, f"envelope no longer applies: {error}") from None
    except Exception as error:  # a rule bug: the history no longer replays
        raise VerificationError(item, f"envelope no longer applies: {type(error).__name__}: {error}") from None
    if outcome.duplicate or outcome.entry_hash != entry["entry_hash"]:
        raise VerificationError(item, f"replayed entry differs ({outcome.outcome} {outcome.code})")
    chunk.tree.add(head)
    chunk.commands += 1
    return head, command.envelope.admitted_at_ms


def _compare_with_export(store: RocksStore, root: Path, metadata: Document, head: Head) -> Report:
    """The rebuilt ledger must export to the very bytes of ``root``, whose file hashes were checked."""
    if (head.sequence, head.entry_hash) != (metadata["sequence"], metadata["last_entry_hash"]):
        raise VerificationError(JOURNAL_FILE, "journal does not end at the exported head")
    journal_tree, state_digest = JournalTreeFold(), StateDigest()
    _compare_lines(journal_lines(store, journal_tree), root / JOURNAL_FILE)
    _compare_lines(delta_lines(store, head.sequence), root / DELTAS_FILE)
    _compare_lines(event_lines(store), root / EVENTS_FILE)
    _compare_lines(state_row_lines(store, state_digest), root / ROWS_FILE)
    state_hash, tree = state_digest.hexdigest(), journal_tree.as_json()
    if state_hash != metadata["logical_state_hash"]:
        raise VerificationError("state", "replayed logical state hash differs from the export")
    if tree["root"] != metadata.get("journal_tree", tree)["root"] or stored_root(store, head.sequence) != tree["root"]:
        raise VerificationError("journal_tree", "the replayed ledger's journal tree root differs from the export's")
    return {"sequence": head.sequence, "entry_hash": head.entry_hash, "logical_state_hash": state_hash,
            "genesis_hash": metadata["genesis_hash"], "journal_tree": tree}


def _compare_lines(replayed: Iterable[bytes], path: Path) -> None:
    with open(path, "rb") as handle:
        exported = (line.rstrip(b"\n") for line in handle)
        for number, (ours, theirs) in enumerate(zip_longest(replayed, exported), start=1):
            if ours != theirs:
                raise VerificationError(f"{path.name}:{number}", "differs from the replayed ledger")
