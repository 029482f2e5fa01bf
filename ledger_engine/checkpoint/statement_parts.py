"""Statement indexes' day-line parts recomputed: replay and ``verify`` hold each commitment to the chunk evidence.

A statement line of a day line names its chunk and commits to its parts
(``parts: {"count", "digest"}``, docs/merkle.md), which the owner computed from
the chunk's stored bytes when it prepared the index. ``FreezeArtifact`` cannot
read evidence, so no rule saw them: it checks the statements' leaf hashes, and
the index artifact's hash binds the statements themselves. So when replay or
``verify`` is given the evidence store and it holds an accepted statement
index's artifact, every line of its statements that is a day line in the state
before the index's entry must carry the artifact of that day line and the
commitment recomputed from its chunk's stored bytes and its correction chain
(``projections/day_line_evidence.py``), and no other line may carry either;
else the history is refused with ``CONFLICTING_EVIDENCE`` at that entry. A
chunk's stored bytes are held to its hash, which replay and ``verify`` hold to
the split of its listener-days (``frozen_chunks.py``). Without the artifact in
the store there is nothing to hold the commitments to.
"""

from __future__ import annotations

from typing import Any

import orjson

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.day_allocator import RawReader
from ledger_engine.checkpoint.form import VerificationError
from ledger_engine.checkpoint.frozen_chunks import accepted_envelope
from ledger_engine.domain.day_lines import DAY_LINE_ID_PREFIX, is_day_line
from ledger_engine.domain.schema.money_allocation import line_key
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import STATE
from ledger_engine.open_json import Document
from ledger_engine.projections.day_line_evidence import ReadEvidence, StateReader, commitments, state_reader

FREEZE_ARTIFACT = "FreezeArtifact"
LINKED = ("artifact", "parts")  # what a statement line of a day line carries, and no other line
# What the recomputation reads of the state: the rows whose values ``verify``'s fold keeps.
PARTS_READS = {STATE: (line_key(DAY_LINE_ID_PREFIX), "correction/")}


def parts_reads(family: str, key: str) -> bool:
    return key.startswith(PARTS_READS.get(family, ()))


def require_committed_parts(evidence: EvidenceStore | None, reader: RawReader, item: str, entry: Any) -> None:
    """The journal entry ``entry`` (at ``item``), applied to the state ``reader`` holds, if it is an accepted
    statement index whose artifact ``evidence`` holds: each of its day lines commits to its recomputed parts."""
    digest = statement_index_hash(entry)
    if evidence is None or digest is None:
        return
    statements = _stored_statements(evidence, item, digest)
    if statements is None:
        return
    try:
        expected = _expected_links(state_reader(reader.get_raw), evidence.get, statements)
    except LedgerError as error:
        raise refused(item, f"its day lines' parts cannot be recomputed: {error.detail}") from None
    for statement in statements:
        for line in statement["lines"]:
            _require_linked(item, statement, line, expected.get(line["line_id"], {}))


def statement_index_hash(entry: Any) -> str | None:
    """The artifact hash of an accepted ``FreezeArtifact`` entry freezing a statement index with a tree."""
    envelope = accepted_envelope(entry, FREEZE_ARTIFACT)
    payload = envelope.get("payload") if envelope is not None else None
    step = payload.get("step") if isinstance(payload, dict) else None
    if not isinstance(step, dict) or step.get("action") != "freeze" or step.get("statement_root") is None:
        return None
    return step.get("artifact_hash")


def _stored_statements(evidence: EvidenceStore, item: str, digest: str) -> list[Document] | None:
    """The statements of the index artifact stored under ``digest``; None when the store does not hold it."""
    try:
        artifact = orjson.loads(evidence.get(digest))
    except LedgerError as error:
        if error.code == ErrorCode.NOT_FOUND:
            return None
        raise refused(item, f"its stored artifact: {error.detail}") from None
    except orjson.JSONDecodeError:
        raise refused(item, "its stored artifact is not JSON") from None
    statements = artifact.get("statements") if isinstance(artifact, dict) else None
    if not isinstance(statements, list) or not all(_has_lines(statement) for statement in statements):
        raise refused(item, "its stored artifact does not list statements with their lines")
    return statements


def _has_lines(statement: Any) -> bool:
    lines = statement.get("lines") if isinstance(statement, dict) else None
    return isinstance(lines, list) and all(isinstance(line, dict) and isinstance(line.get("line_id"), str)
                                           for line in lines)


def _expected_links(read: StateReader, read_evidence: ReadEvidence, statements: list[Document]
                    ) -> dict[str, Document]:
    """What each statement line that is a day line must carry, by line ID: its artifact and recomputed commitment.
    Only IDs a day line can have are read: ``verify``'s fold keeps no other line."""
    day_lines = {}
    for line_id in {line["line_id"] for statement in statements for line in statement["lines"]}:
        record = read(line_key(line_id)) if line_id.startswith(DAY_LINE_ID_PREFIX) else None
        if record is not None and is_day_line(record):
            day_lines[line_id] = record
    committed = commitments(read, read_evidence, day_lines.values())
    return {line_id: {"artifact": record["artifact"], "parts": committed[line_id]}
            for line_id, record in day_lines.items()}


def _require_linked(item: str, statement: Document, line: Document, expected: Document) -> None:
    found = {name: line[name] for name in LINKED if name in line}
    if found != expected:
        raise refused(item, f"statement {statement.get('public_proof_id')} links line {line['line_id']} to "
                            f"{found or 'no parts'}, but its chunk's evidence makes {expected or 'none'}")


def refused(item: str, reason: str) -> VerificationError:
    return VerificationError(item, f"statement index refused: {reason}", ErrorCode.CONFLICTING_EVIDENCE)
