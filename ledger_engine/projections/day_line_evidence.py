"""Day lines' parts read from the ledger and the evidence store: what a statement commits to, a parts file holds.

A day line's parts (``ledger_engine/merkle/day_line_parts.py``) come from its
chunk's stored bytes and, for a remainder, from the listener-days the
corrections of its chain took out: a remainder names the correction that wrote
it (``correction_id``) and the line it follows (``replaces``), and that
correction's record names its listener-day. The owner reads them at a command
boundary, to prepare a statement index and to hand out parts files; replay and
``verify`` read them from the state before a statement index's entry
(``checkpoint/statement_parts.py``). Either way each chunk's bytes are read
once, and are held to the hash the day line names.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Callable, Iterable, Iterator

import orjson

from ledger_engine.amounts import parse_amount
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.domain.schema.money_allocation import correction_key, line_key
from ledger_engine.layout import STATE
from ledger_engine.merkle.day_line_parts import ChunkParts, commitment, parts_document, parts_total
from ledger_engine.open_json import Document, RecordData

StateReader = Callable[[str], RecordData | None]  # a state record's data by its key
ReadEvidence = Callable[[str], bytes]  # evidence bytes by their SHA-256


def state_reader(get_raw: Callable[[str, bytes], bytes | None]) -> StateReader:
    """Records' data through a raw reader: a store's ``get``, a pending batch's or a fold's ``get_raw``."""

    def read(record_key: str) -> RecordData | None:
        raw = get_raw(STATE, record_key.encode())
        return None if raw is None else orjson.loads(raw)["data"]

    return read


def taken_out(read: StateReader, line: RecordData) -> frozenset[str]:
    """The listeners whose days the corrections of ``line``'s chain took out of its chunk's freeze."""
    listeners = set()
    while line["correction_id"] is not None:
        listeners.add(_required(read, correction_key(line["correction_id"]))["listener_day"][0])
        line = _required(read, line_key(line["replaces"][0]))
    return frozenset(listeners)


def _required(read: StateReader, record_key: str) -> RecordData:
    record = read(record_key)
    if record is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"{record_key}, which a day line's correction chain names, is missing")
    return record


def day_line_documents(read: StateReader, read_evidence: ReadEvidence,
                       lines: Iterable[RecordData]) -> Iterator[tuple[RecordData, Document]]:
    """Each day line of ``lines`` with its parts document, chunk by chunk."""
    by_chunk: dict[str, list[RecordData]] = defaultdict(list)
    for line in lines:
        by_chunk[line["artifact"]["hash"]].append(line)
    for digest, chunk_lines in sorted(by_chunk.items()):
        chunk = ChunkParts(chunk_bytes(read_evidence, digest))
        for line in chunk_lines:
            document = parts_document(line, chunk.of(line["role"], line["recipient_id"], taken_out(read, line)))
            _require_total(document)
            yield line, document


def chunk_bytes(read_evidence: ReadEvidence, digest: str) -> bytes:
    """A chunk's stored bytes, which must be the ones its day lines name."""
    content = read_evidence(digest)
    if hashlib.sha256(content).hexdigest() != digest:
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE, f"the evidence read for chunk {digest} has another hash")
    return content


def _require_total(document: Document) -> None:
    """A day line is the sum of its parts; anything else is a chunk or a chain that is not the one frozen."""
    day_line, total = document["day_line"], parts_total(document["parts"])
    if total != parse_amount(day_line["amount"]):
        raise LedgerError(ErrorCode.CONFLICTING_EVIDENCE,
                          f"day line {day_line['line_id']} holds {day_line['amount']}, its parts in chunk "
                          f"{day_line['artifact']['hash']} total {total}")


def commitments(read: StateReader, read_evidence: ReadEvidence,
                lines: Iterable[RecordData]) -> dict[str, Document]:
    """Each day line's commitment to its parts (``{"count", "digest"}``), by line ID."""
    return {line["line_id"]: commitment(document) for line, document in day_line_documents(read, read_evidence, lines)}
