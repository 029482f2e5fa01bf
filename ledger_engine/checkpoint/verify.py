"""Verification of a portable export, trusting nothing in it but what it proves.

The form (every file hash, every line canonical JSON: ``form.py``, on another
core for a large export), the genesis, the journal chain and, in step with
the journal, every command's delta: its ``delta_hash``, its tie to the entry
(the command result row it must hold, event keys of its own sequence), and
its fold into the state. The fold of deltas 0..head must equal the exported state rows and
events exactly, so an edited row or event fails even with its metadata
recomputed. The fold lives in a scratch store (``fold.py``), so memory stays
flat however long the journal is. Every accepted frozen chunk is split again
from the state folded before it, whose values the fold keeps for the records a
split reads, and must be the one its payload states (``frozen_chunks.py``);
an accepted correction of a frozen listener-day must quote a line of it.
Given the evidence store, a statement index whose artifact it holds must
commit each day line to the parts its chunk's stored bytes make
(``statement_parts.py``); the fold keeps the day lines and corrections for that.
The first failing item is reported by name,
e.g. ``journal.jsonl:17`` or ``state_rows.jsonl:40``; a fault of form is named
before any fault of content.
"""

from __future__ import annotations

import hashlib
import os
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.adapters.files import read_regular_file
from ledger_engine.application.journal import recompute_entry_hash
from ledger_engine.open_json import Document
from ledger_engine.storage.value_codec import encode_record, encode_value
from ledger_engine.canonical import DELTA_DOMAIN, STATE_DOMAIN, ZERO_HASH, engine_bytes, sha256_hex
from ledger_engine.checkpoint.export import EXPORT_FORMAT, EXPORT_FORMAT_VERSION, JournalTreeFold
from ledger_engine.checkpoint.fold import Address, DiskFold
from ledger_engine.checkpoint.frozen_chunks import (
    FrozenChunk, FrozenChunkCheck, chunk_runs, frozen_chunk, quoted_lines, split_reads,
)
from ledger_engine.checkpoint.statement_parts import parts_reads, require_committed_parts
from ledger_engine.checkpoint.form import (
    DELTAS_FILE, EVENTS_FILE, GENESIS_FILE, JOURNAL_FILE, METADATA_FILE, ROWS_FILE, FormCheck, Lines,
    VerificationError, file_digest,
)
from ledger_engine.envelope import envelope_hash
from ledger_engine.errors import LedgerError
from ledger_engine.genesis import genesis_hash, genesis_records, validate_genesis
from ledger_engine.keys import seq20
from ledger_engine.layout import COMMAND_RESULT, DELTA_FAMILIES, DIGEST_FAMILIES, EVENTS

METADATA_FIELDS = ("sequence", "last_entry_hash", "logical_state_hash", "genesis_hash", "files")
ENTRY_FIELDS = ("sequence", "previous_entry_hash", "envelope", "outcome", "result", "delta_hash", "entry_hash")
ROW_FIELDS = {"column_family", "key", "value"}

def hash_tree(root: Path) -> dict[str, Document]:
    """Every file under ``root`` (none when it is absent) by its relative path: its SHA-256 and size.

    A tree that is hashed to be trusted later holds plain files and directories only: a symbolic
    link or a special file is refused, since copying the tree would follow or block on it.
    """
    if root.exists() and (root.is_symlink() or not root.is_dir()):
        raise VerificationError(root.name, "not a directory")
    files = {}
    for path in sorted(root.rglob("*")) if root.exists() else ():
        name = path.relative_to(root).as_posix()
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise VerificationError(f"{root.name}/{name}", "neither a regular file nor a directory")
        if path.is_file():
            digest, size = file_digest(path)
            files[name] = {"sha256": digest, "bytes": size}
    return files


def require_fields(document: Any, item: str, fields: dict[str, type]) -> Document:
    """``document`` as a JSON object holding each of ``fields`` with its type (a bool is no int), or a
    ``VerificationError`` naming the first that it lacks: a manifest of the wrong shape is a damaged one."""
    if not isinstance(document, dict):
        raise VerificationError(item, "not a JSON object")
    for name, kind in fields.items():
        value = document.get(name)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise VerificationError(item, f"{name} is missing or not a {kind.__name__}")
    return document


def read_metadata(directory: str | os.PathLike[str]) -> Document:
    path = Path(directory) / METADATA_FILE
    try:
        metadata = orjson.loads(read_regular_file(path))
    except (OSError, orjson.JSONDecodeError) as error:
        raise VerificationError(METADATA_FILE, f"unreadable: {error}") from None
    if not isinstance(metadata, dict) or metadata.get("format") != EXPORT_FORMAT \
            or metadata.get("format_version") != EXPORT_FORMAT_VERSION:
        found = metadata.get("format") if isinstance(metadata, dict) else None
        raise VerificationError(METADATA_FILE, f"unknown export format {found!r}")
    missing = [name for name in METADATA_FIELDS if name not in metadata]
    if missing:
        raise VerificationError(METADATA_FILE, f"lacks {missing[0]}")
    return metadata


def verify_export(directory: str | os.PathLike[str], *, trusted_genesis: str | None = None,
                  evidence: EvidenceStore | None = None) -> Document:
    """Verify everything; returns the metadata, or raises ``VerificationError`` naming the first bad item.

    With ``trusted_genesis``, the export must also start from that genesis (``require_trusted_genesis``); with
    ``evidence``, what it holds of frozen chunks and statement indexes must be what the history froze.
    """
    root = Path(directory)
    metadata = read_metadata(root)
    with FormCheck(root, metadata) as form:
        try:
            verified = _verify_content(root, metadata, trusted_genesis, form.lines, evidence)
        except Exception:  # on damaged form, anything may go wrong; the form is what to name
            form.require()
            raise
        form.require()
    return verified


def _verify_content(root: Path, metadata: Document, trusted_genesis: str | None,
                    lines: Lines, evidence: EvidenceStore | None) -> Document:
    genesis = verify_genesis(root, metadata, trusted_genesis)
    quoted = quoted_lines(root / JOURNAL_FILE)
    with DiskFold.scratch() as folded, FrozenChunkCheck(evidence=evidence, quoted=quoted) as check:
        journal_tree = _verify_history(metadata, genesis, folded, lines, check)
        _verify_state_rows(root, metadata, folded, lines)
        _verify_events(root, folded, lines)
    return {**metadata, "journal_tree": _verify_journal_tree(metadata, journal_tree)}


def _verify_journal_tree(metadata: Document, computed: Document) -> Document:
    """The root the export claims must be the one its verified journal makes.

    Exports written before the journal tree lack the claim; they verify, and the
    root reported is the one computed.
    """
    if "journal_tree" in metadata:
        _require(metadata["journal_tree"] == computed, METADATA_FILE,
                 f"journal_tree {metadata['journal_tree']!r} is not the Merkle root of the journal ({computed['root']} "
                 f"over {computed['size']} entries)")
    return computed


def verify_genesis(root: Path, metadata: Document, trusted_genesis: str | None = None) -> Document:
    require_trusted_genesis(metadata["genesis_hash"], trusted_genesis, GENESIS_FILE)
    try:
        document: Document = orjson.loads(read_regular_file(root / GENESIS_FILE))
        matches = genesis_hash(document) == metadata["genesis_hash"]
        validate_genesis(document)  # so replay and the walk below can start from its records
    except (OSError, orjson.JSONDecodeError, LedgerError, TypeError) as error:
        detail = f": {error.detail}" if isinstance(error, LedgerError) else ""
        raise VerificationError(GENESIS_FILE, f"not a genesis document{detail}") from None
    if not matches:
        raise VerificationError(GENESIS_FILE, "genesis hash does not match metadata")
    return document


def require_trusted_genesis(found: str, trusted: str | None, item: str) -> None:
    """History from outside the ledger must start from the genesis the deployment trusts, when it names one.

    Every hash in an export or a backup is recomputed from its own genesis, and the journal
    chain starts from 32 zero bytes (docs/spec/engine-and-journal.md §7), not from the
    genesis. So whoever can write one can write a whole self-consistent history from another
    genesis (one more finance actor, say) with the real journal entries, head and journal
    tree root. Only a genesis hash kept apart from the data tells them apart.
    """
    if trusted is not None and found != trusted:
        raise VerificationError(item, f"starts from genesis {found}, not from the genesis this deployment trusts "
                                      f"({trusted})")


def _verify_history(metadata: Document, genesis: Document, folded: DiskFold,
                    lines: Lines, check: FrozenChunkCheck) -> Document:
    """Walk the journal and the deltas in step: chain, delta hashes, ties, frozen chunks, the fold, and the
    journal tree."""
    journal_tree = JournalTreeFold()
    deltas = lines(DELTAS_FILE)
    genesis_delta = _delta_at(next(deltas, None), 0, DELTAS_FILE)
    _require(genesis_delta[1] == _genesis_delta(genesis), genesis_delta[0], "is not the genesis state")
    _fold(genesis_delta, folded)
    previous_hash, sequence = ZERO_HASH, 0
    in_step = zip_longest(lines(JOURNAL_FILE), deltas)
    for journal_line, delta_line in (pair for run in chunk_runs(in_step, _frozen_chunk_of)
                                     for pair in check.each_checked(folded, run)):
        sequence += 1
        entry_item, _, entry = _entry(journal_line, sequence)
        check.require_quote(entry_item, entry)
        require_committed_parts(check.evidence, folded, entry_item, entry)
        _require(entry["previous_entry_hash"] == previous_hash, entry_item, "previous entry hash breaks the chain")
        _require(recompute_entry_hash(entry) == entry["entry_hash"], entry_item, "entry hash does not match its contents")
        delta = _delta_at(delta_line, sequence, DELTAS_FILE)
        _require(_delta_hash(delta[1]) == entry["delta_hash"], delta[0], f"does not hash to {entry_item}'s delta_hash")
        _require_tied(delta, entry, entry_item, sequence)
        _fold(delta, folded)
        journal_tree.add(entry["entry_hash"])
        previous_hash = entry["entry_hash"]
    _require((sequence, previous_hash) == (metadata["sequence"], metadata["last_entry_hash"]),
             JOURNAL_FILE, "journal does not end at the exported head")
    return journal_tree.as_json()


def _frozen_chunk_of(pair: tuple[tuple[str, bytes, Any] | None, Any]) -> FrozenChunk | None:
    journal_line = pair[0]
    return None if journal_line is None else frozen_chunk(journal_line[0], journal_line[2])


def _require(condition: bool, item: str, reason: str) -> None:
    if not condition:
        raise VerificationError(item, reason)


def _entry(line: tuple[str, bytes, Any] | None, sequence: int) -> tuple[str, bytes, Document]:
    if line is None:
        raise VerificationError(JOURNAL_FILE, f"ends before sequence {sequence}, which deltas.jsonl has")
    item, raw, entry = line
    _require(isinstance(entry, dict) and all(name in entry for name in ENTRY_FIELDS), item, "not a journal entry")
    _require(entry["sequence"] == sequence, item, f"expected sequence {sequence}, found {entry['sequence']}")
    _require(isinstance(entry["envelope"], dict) and isinstance(entry["envelope"].get("command_id"), str),
             item, "envelope has no command ID")
    return item, raw, entry


def _delta_at(line: tuple[str, bytes, Any] | None, sequence: int, name: str) -> tuple[str, list[Document]]:
    if line is None:
        raise VerificationError(name, f"has no delta for sequence {sequence}")
    item, _, value = line
    _require(isinstance(value, dict) and set(value) == {"delta", "sequence"} and isinstance(value["delta"], list),
             item, "not a delta line")
    _require(value["sequence"] == sequence, item, f"expected the delta of sequence {sequence}")
    rows = value["delta"]
    for row in rows:
        _require(isinstance(row, dict) and set(row) == ROW_FIELDS and row["column_family"] in DELTA_FAMILIES
                 and isinstance(row["key"], str), item, "not a delta row")
    order = [(row["column_family"].encode(), row["key"].encode()) for row in rows]
    _require(order == sorted(set(order)), item, "delta rows out of canonical order")
    return item, rows


def _delta_hash(rows: list[Document]) -> str:
    return sha256_hex(DELTA_DOMAIN.encode() + engine_bytes(rows))


def _genesis_delta(genesis: Document) -> list[Document]:
    rows = sorted((family, key, data) for family, key, data in genesis_records(genesis))
    return [{"column_family": family, "key": key, "value": orjson.loads(encode_record(1, data))}
            for family, key, data in rows]


def _require_tied(delta: tuple[str, list[Document]], entry: Document, entry_item: str,
                  sequence: int) -> None:
    """A delta belongs to its entry: the entry's command result, and events of its own sequence only.

    The delta is already proven by the entry's delta_hash, so a mismatch names the entry.
    """
    delta_item, rows = delta
    expected_result = orjson.loads(encode_value({
        "envelope_hash": envelope_hash(engine_bytes(entry["envelope"])), "sequence": sequence,
        "outcome": entry["outcome"], "result": entry["result"]}))
    results = [row for row in rows if row["column_family"] == COMMAND_RESULT]
    _require(len(results) == 1 and results[0]["key"] == entry["envelope"]["command_id"]
             and results[0]["value"] == expected_result, entry_item,
             f"does not match the command result its delta ({delta_item}) records")
    prefix = seq20(sequence) + "/"
    _require(all(row["key"].startswith(prefix) and row["value"] is not None
                 for row in rows if row["column_family"] == EVENTS), delta_item, "an event of another sequence")


def _fold(delta: tuple[str, list[Document]], folded: DiskFold) -> None:
    item, rows = delta
    for row in rows:
        address = (row["column_family"], row["key"])
        _require(address[0] != EVENTS or folded.get(address) is None, item, "rewrites an immutable event")
        value = None if row["value"] is None else engine_bytes(row["value"])
        folded.set(address, None if value is None else hashlib.sha256(value).digest())
        if split_reads(*address) or parts_reads(*address):
            folded.keep(address, value)


def _verify_state_rows(root: Path, metadata: Document, folded: DiskFold, lines: Lines) -> None:
    matched = 0
    digest = hashlib.sha256(STATE_DOMAIN.encode() + b"[")
    previous: tuple[bytes, bytes] | None = None
    for item, raw, row in lines(ROWS_FILE):
        _require(isinstance(row, dict) and set(row) == ROW_FIELDS and row["column_family"] in DIGEST_FAMILIES
                 and isinstance(row["key"], str), item, "not a logical state row")
        order = (row["column_family"].encode(), row["key"].encode())
        _require(previous is None or order > previous, item, "rows out of canonical order")
        _require(folded.get((row["column_family"], row["key"])) == hashlib.sha256(
            engine_bytes(row["value"])).digest(), item,
            f"{row['column_family']}/{row['key']} differs from the state the journal's deltas produce")
        digest.update(raw if previous is None else b"," + raw)
        previous = order
        matched += 1
    digest.update(b"]")
    missing = _first_missing(lambda: folded.addresses(events=False), matched, root / ROWS_FILE,
                             lambda row: (row["column_family"], row["key"]))
    if missing is not None:
        raise VerificationError(ROWS_FILE, f"lacks {missing[0]}/{missing[1]}, which the journal's deltas produce")
    _require(digest.hexdigest() == metadata["logical_state_hash"], ROWS_FILE,
             "logical state hash does not match metadata")


def _verify_events(root: Path, folded: DiskFold, lines: Lines) -> None:
    previous, matched = "", 0
    for item, _, row in lines(EVENTS_FILE):
        _require(isinstance(row, dict) and set(row) == {"key", "value"} and isinstance(row["key"], str)
                 and row["key"] > previous, item, "bad or out-of-order event")
        _require(folded.get((EVENTS, row["key"])) == hashlib.sha256(engine_bytes(row["value"])).digest(),
                 item, f"event {row['key']} differs from the events the journal's deltas produce")
        previous = row["key"]
        matched += 1
    missing = _first_missing(lambda: folded.addresses(events=True), matched, root / EVENTS_FILE,
                             lambda row: (EVENTS, row["key"]))
    if missing is not None:
        raise VerificationError(EVENTS_FILE, f"lacks event {missing[1]}, which the deltas produce")


def _first_missing(folded: Callable[[], Iterator[Address]], matched: int, path: Path,
                   address_of: Callable[[Document], Address]) -> Address | None:
    """The first folded address ``path`` lacks, given that each of its ``matched`` lines was found in the fold:
    only when the fold holds more is the file read again, in step with the fold (both are in export order)."""
    if sum(1 for _ in folded()) == matched:
        return None
    with open(path, "rb") as handle:
        exported = (address_of(orjson.loads(line)) for line in handle)
        return next((address for address in folded() if address != next(exported, None)), None)
