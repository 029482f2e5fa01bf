"""The recipient's check of a day line's parts file against their statement (docs/merkle.md, "Parts files").

A statement line of a day line names its chunk (``artifact``) and commits to
its parts: ``parts: {"count", "digest"}`` (``day_line_parts.py``). A parts
file is the parts document itself, in canonical JSON. Against a statement
whose leaf and proof already passed, each file is checked in this order, and
the first failure names it:

- read strictly, as a statement file is, with exactly its fields, each of its
  shape (``MALFORMED``, ``UNSUPPORTED_VERSION``, ``INVALID_HASH``);
- it names a day line of the statement (``PARTS_NOT_IN_STATEMENT``), with that
  line's chunk, role and amount and the statement's recipient
  (``PARTS_DAY_LINE_MISMATCH``);
- its count is the one the statement commits to, and it lists that many parts
  (``PARTS_COUNT_MISMATCH``);
- its parts' amounts, integers, sum to the day line's amount
  (``PARTS_SUM_MISMATCH``);
- its digest is the one the statement commits to (``PARTS_DIGEST_MISMATCH``).

The last check alone decides; the ones before it say what was changed.
"""

from __future__ import annotations

from typing import Any, Sequence

from ledger_engine.merkle.day_line_parts import (
    ARTIFACT_FIELDS, DAY_LINE_FIELDS, PART_FIELDS, PARTS_FILE_FIELDS, PARTS_VERSION, REFERENCE_BY_ROLE, parts_digest,
)
from ledger_engine.merkle.document import (
    FAILED, HEX_HASH, NOT_MADE, PASSED, ProofRejected, Reason, is_amount, join, read_count, read_document, read_hash,
    read_object, reject, require_fields, require_version,
)
from ledger_engine.open_json import Document, Report

MAX_PARTS_BYTES = 16 << 20  # a day line of 2,500 listener-days, each with several works, fits many times over
COMMITMENT_FIELDS = ("count", "digest")


# The statement's side: each day line names its chunk and commits to its parts.

def check_day_lines(statement: Document) -> None:
    """Each statement line naming a chunk or parts names both, well formed, under a line ID of its own."""
    seen: set[str] = set()
    for position, line in enumerate(statement["lines"]):
        if "artifact" not in line and "parts" not in line:
            continue
        where = f"statement.lines[{position}]"
        _statement_shape(type(line.get("line_id")) is str and line["line_id"] not in seen, join(where, "line_id"),
                         "a day line has a line ID no other day line of the statement has")
        seen.add(line["line_id"])
        _check_artifact(line, where)
        _check_commitment(line, where)


def _check_artifact(line: Document, where: str) -> None:
    artifact: Any = line.get("artifact")  # the statement's JSON, its shape checked here
    _statement_shape(type(artifact) is dict and sorted(artifact) == sorted(ARTIFACT_FIELDS), join(where, "artifact"),
                     "a day line's artifact is its chunk's day, number and hash")
    for name in ("day", "chunk"):
        _statement_shape(type(artifact[name]) is int and artifact[name] >= 0, join(where, f"artifact.{name}"),
                         f"the chunk's {name} is an integer of at least 0")
    _statement_shape(_is_hash(artifact["hash"]), join(where, "artifact.hash"), "the chunk's hash is 64 lowercase hex")


def _check_commitment(line: Document, where: str) -> None:
    parts: Any = line.get("parts")  # the statement's JSON, its shape checked here
    _statement_shape(type(parts) is dict and sorted(parts) == sorted(COMMITMENT_FIELDS), join(where, "parts"),
                     "a day line commits to its parts' count and digest")
    _statement_shape(type(parts["count"]) is int and parts["count"] >= 1, join(where, "parts.count"),
                     "a day line has at least one part")
    _statement_shape(_is_hash(parts["digest"]), join(where, "parts.digest"), "a digest is 64 lowercase hex digits")


def _statement_shape(condition: bool, field: str, detail: str) -> None:
    if not condition:
        reject(Reason.INVALID_STATEMENT, field, detail)


def _is_hash(value: Any) -> bool:
    return type(value) is str and HEX_HASH.fullmatch(value) is not None


def statement_day_lines(statement: Document) -> dict[str, Document]:
    """The statement's day lines (those committing to parts), by line ID, in statement order."""
    return {line["line_id"]: line for line in statement["lines"] if "parts" in line}


# The parts file's side.

def read_parts_file(raw: bytes | Document) -> Document:
    """A parts file's document, each field checked for its shape in the documented order."""
    document = read_document(raw, MAX_PARTS_BYTES)
    require_version(document, (PARTS_VERSION,))
    require_fields(document, PARTS_FILE_FIELDS)
    role = _read_day_line(document)
    read_count(document, "count", 1)
    _read_parts(document, role)
    return document


def _read_day_line(document: Document) -> str:
    day_line = read_object(document, "day_line")
    require_fields(day_line, DAY_LINE_FIELDS, "day_line")
    _read_text(day_line, "line_id", "day_line")
    artifact = read_object(day_line, "artifact", "day_line")
    require_fields(artifact, ARTIFACT_FIELDS, "day_line.artifact")
    read_count(artifact, "day", 0, "day_line.artifact")
    read_count(artifact, "chunk", 0, "day_line.artifact")
    read_hash(artifact, "hash", "day_line.artifact")
    if type(day_line["role"]) is not str or day_line["role"] not in REFERENCE_BY_ROLE:
        reject(Reason.MALFORMED, "day_line.role", f"a role is one of {', '.join(REFERENCE_BY_ROLE)}")
    if day_line["recipient_id"] is not None:
        _read_text(day_line, "recipient_id", "day_line")
    _read_amount(day_line, "amount", "day_line")
    return day_line["role"]


def _read_parts(document: Document, role: str) -> None:
    if type(document["parts"]) is not list:
        reject(Reason.MALFORMED, "parts", "not an array of parts")
    reference = REFERENCE_BY_ROLE[role]
    line_fields = ("amount",) if reference is None else (reference, "amount")
    previous = -1
    for position, part in enumerate(document["parts"]):
        where = f"parts[{position}]"
        if type(part) is not dict:
            reject(Reason.MALFORMED, where, "a part is a JSON object")
        require_fields(part, PART_FIELDS, where)
        if read_count(part, "position", 0, where) <= previous:
            reject(Reason.MALFORMED, join(where, "position"), "parts are in increasing position order, each once")
        previous = part["position"]
        _read_part_lines(part, line_fields, where)


def _read_part_lines(part: Document, fields: tuple[str, ...], where: str) -> None:
    lines = part["lines"]
    if type(lines) is not list or not lines:
        reject(Reason.MALFORMED, join(where, "lines"), "a part has at least one line")
    for position, line in enumerate(lines):
        inner = f"{where}.lines[{position}]"
        if type(line) is not dict:
            reject(Reason.MALFORMED, inner, "a line is a JSON object")
        require_fields(line, fields, inner)
        for name in fields[:-1]:
            _read_text(line, name, inner)
        _read_amount(line, "amount", inner)


def _read_text(document: Document, name: str, where: str) -> None:
    if type(document[name]) is not str or not document[name]:
        reject(Reason.MALFORMED, join(where, name), "not a non-empty string")


def _read_amount(document: Document, name: str, where: str) -> None:
    if not is_amount(document[name]):
        reject(Reason.MALFORMED, join(where, name), "an amount is a canonical unsigned 64-bit decimal string")


# The link: a parts file against the statement.

def check_parts_file(raw: bytes | Document, statement: Document) -> str:
    """The ID of the statement's day line ``raw`` is the parts of; ProofRejected naming the first check that fails."""
    document = read_parts_file(raw)
    line = _named_day_line(document, statement)
    _require_same_day_line(document["day_line"], line, statement["recipient_id"])
    _require_counted(document, line["parts"]["count"])
    _require_sum(document, line["amount"])
    if parts_digest(document) != line["parts"]["digest"]:
        reject(Reason.PARTS_DIGEST_MISMATCH, "", "the file does not hash to the digest the statement commits to for "
                                                 "its day line: its parts were changed")
    line_id: str = line["line_id"]
    return line_id


def _named_day_line(document: Document, statement: Document) -> Document:
    line_id = document["day_line"]["line_id"]
    line = statement_day_lines(statement).get(line_id)
    if line is None:
        reject(Reason.PARTS_NOT_IN_STATEMENT, "day_line.line_id", f"the statement lists no day line {line_id}")
    return line


def _require_same_day_line(day_line: Document, line: Document, recipient_id: str) -> None:
    for name in ("artifact", "role", "amount"):
        if day_line[name] != line.get(name):
            reject(Reason.PARTS_DAY_LINE_MISMATCH, join("day_line", name),
                   f"the statement's day line {line['line_id']} has another {name}")
    if day_line["recipient_id"] != recipient_id:
        reject(Reason.PARTS_DAY_LINE_MISMATCH, "day_line.recipient_id",
               f"the day line pays {day_line['recipient_id']}, not the statement's recipient {recipient_id}")


def _require_counted(document: Document, committed: int) -> None:
    if document["count"] != committed:
        reject(Reason.PARTS_COUNT_MISMATCH, "count", f"the file counts {document['count']} parts; the statement "
                                                     f"commits to {committed}")
    if len(document["parts"]) != committed:
        reject(Reason.PARTS_COUNT_MISMATCH, "parts", f"the file lists {len(document['parts'])} parts; the statement "
                                                     f"commits to {committed}")


def _require_sum(document: Document, amount: str) -> None:
    total = sum(int(line["amount"]) for part in document["parts"] for line in part["lines"])
    if total != int(amount):
        reject(Reason.PARTS_SUM_MISMATCH, "parts", f"the parts sum to {total}, not to the day line's {amount}")


# Every file given, and every day line of the statement.

def check_parts_files(statement: Document, files: Sequence[bytes]) -> dict[str, list[Report]]:
    """Each file's outcome (in the order given) and each day line's: passed when a file given for it passed."""
    outcomes = [_file_outcome(number, raw, statement) for number, raw in enumerate(files)]
    by_line: dict[str, str] = {}
    for outcome in outcomes:
        if outcome["line_id"] is not None and by_line.get(outcome["line_id"]) != FAILED:
            by_line[outcome["line_id"]] = outcome["result"]
    day_lines = [{"line_id": line_id, "amount": line["amount"], "count": line["parts"]["count"],
                  "result": by_line.get(line_id, NOT_MADE)} for line_id, line in statement_day_lines(statement).items()]
    return {"parts_files": outcomes, "day_lines": day_lines}


def _file_outcome(number: int, raw: bytes, statement: Document) -> Report:
    try:
        line_id = check_parts_file(raw, statement)
    except ProofRejected as error:
        return {"file": number, "line_id": _named_line_id(raw, statement), "result": FAILED,
                "reason": str(error.reason), "field": error.field, "detail": error.proof_detail}
    return {"file": number, "line_id": line_id, "result": PASSED, "reason": "", "field": "",
            "detail": f"the parts of day line {line_id}: count, sum and digest as the statement commits to"}


def _named_line_id(raw: bytes, statement: Document) -> str | None:
    """The statement's day line a refused file names, when it reads that far."""
    try:
        line_id = read_parts_file(raw)["day_line"]["line_id"]
    except ProofRejected:
        return None
    return line_id if line_id in statement_day_lines(statement) else None
