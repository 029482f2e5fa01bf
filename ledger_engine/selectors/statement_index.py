"""Statement indexes with a statement tree: built at a command boundary, and each recipient's statement file.

``prepare_statement_index`` reads one accounting batch's lines from a store at
a command boundary and builds, per recipient, the statement leaf of
docs/merkle.md: recipient, period (the accounting batch and its window), the
lines the batch speaks for (frozen after them, over their day), their total and
payment status. A day line (docs/adr/0073) also names its chunk (``artifact``)
and commits to its parts, the listener-days it is made of
(``parts: {"count", "digest"}``), computed from the chunk's stored bytes: so
the index reads the evidence store too. A line of a work imported with a
display title names it (``title``, read from the work's record); every other
line keeps the bytes it always had. A statement of a recipient with a display
name names it (``recipient_name``, read from its account); others keep the
bytes they always had. Each statement gets a new random public
proof ID. The index artifact, the canonical JSON of every statement in
public-proof-ID order, is the private bytes the envelope's evidence names; the
freeze step carries each statement's leaf hash and the tree root, which the
rule recomputes.

``statement_file`` rebuilds the tree from that artifact once the index is
confirmed on chain and hands a recipient their statement with its inclusion
proof, the batch root and the anchoring transaction; ``parts_file`` hands
them the parts document of one of its day lines, which the statement commits to.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Callable, Mapping

import orjson

from ledger_engine.amounts import format_amount, parse_amount
from ledger_engine.canonical import canonical_bytes
from ledger_engine.domain.commands.money.batches import ACCOUNTING_KINDS
from ledger_engine.domain.commands.money.statements import covers
from ledger_engine.domain.schema.money_allocation import AllocationLine, line_key
from ledger_engine.domain.schema.money_payouts import Batch, batch_key, statement_key
from ledger_engine.domain.view import shaped
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.domain.schema.streaming import work_key
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import INDEXES, STATE
from ledger_engine.merkle.day_line_parts import commitment
from ledger_engine.merkle.statement import StatementTree, statement_leaf_hash
from ledger_engine.open_json import Document, RecordData, Unvalidated
from ledger_engine.projections.day_line_evidence import ReadEvidence, commitments, day_line_documents, state_reader
from ledger_engine.selectors.account_queries import display_names
from ledger_engine.selectors.view import LedgerView

INDEX_ARTIFACT_VERSION = "porto:london:statement-index:v1"
LINE_FIELDS = ("line_id", "day", "role", "amount", "status", "work_id", "node_id")


def _state(view: LedgerView, record_key: str) -> RecordData | None:
    raw = view.get(STATE, record_key.encode())
    data: RecordData | None = orjson.loads(raw)["data"] if raw is not None else None
    return data


def _required(view: LedgerView, record_key: str, missing: str) -> RecordData:
    """The record at ``record_key``; ``NOT_FOUND`` (``missing`` says what) if there is none."""
    data = _state(view, record_key)
    if data is None:
        raise LedgerError(ErrorCode.NOT_FOUND, missing)
    return data


def _require(condition: bool, code: ErrorCode, detail: str) -> None:
    if not condition:
        raise LedgerError(code, detail)


def accounting_batch(view: LedgerView, batch_id: str) -> RecordData:
    batch = _required(view, batch_key(batch_id), f"batch {batch_id} does not exist")
    _require(batch["kind"] in ACCOUNTING_KINDS and batch["artifact"] is not None, ErrorCode.INVALID_STATE,
             f"batch {batch_id} is not a frozen accounting batch")
    return batch


def covered_lines(view: LedgerView, batch: RecordData) -> dict[str, list[RecordData]]:
    """Each recipient's lines the batch speaks for, by recipient, in line-ID order."""
    by_recipient: dict[str, list[RecordData]] = {}
    for raw_key, _ in view.scan(INDEXES, b"recipient_line/"):
        recipient_id, day, line_id = raw_key.decode().split("/")[1:]
        if not batch["window_start_ms"] <= int(day) * DAY_MS < batch["window_end_ms"]:
            continue
        line = _state(view, line_key(line_id))
        if line is not None and covers(shaped(batch, Batch), shaped(line, AllocationLine)):
            by_recipient.setdefault(recipient_id, []).append(line)
    return {recipient: sorted(lines, key=lambda line: line["line_id"]) for recipient, lines in by_recipient.items()}


def work_titles(view: LedgerView, lines: dict[str, list[RecordData]]) -> dict[str, str]:
    """The display title of each work the lines name that has one, by work ID."""
    work_ids = sorted({line["work_id"] for recipient_lines in lines.values() for line in recipient_lines
                       if line.get("work_id") is not None})
    works = {work_id: _state(view, work_key(work_id)) or {} for work_id in work_ids}
    return {work_id: work["title"] for work_id, work in works.items() if "title" in work}


def statement_document(public_proof_id: str, recipient_id: str, batch: RecordData,
                       lines: list[RecordData], parts: Mapping[str, Document] | None = None,
                       titles: Mapping[str, str] | None = None, name: str | None = None) -> Document:
    """A recipient's statement for one accounting batch: the leaf of docs/merkle.md. ``parts`` holds each day
    line's commitment to its parts, by line ID; ``titles`` each titled work's display title, by work ID;
    ``name`` the recipient's display name, if it has one."""
    total = sum(parse_amount(line["amount"]) for line in lines)
    paid = sum(parse_amount(line["amount"]) for line in lines if line["status"] == "paid")
    status = "paid" if paid == total else "unpaid" if paid == 0 else "partly_paid"
    return {
        "public_proof_id": public_proof_id,
        "recipient_id": recipient_id,
        **({"recipient_name": name} if name is not None else {}),  # unnamed recipients keep their bytes
        "period": {"accounting_batch_id": batch["batch_id"], "window_start_ms": batch["window_start_ms"],
                   "window_end_ms": batch["window_end_ms"]},
        "lines": [statement_line(line, parts or {}, titles or {}) for line in lines],
        "total": format_amount(total),
        "payment": {"status": status, "paid_amount": format_amount(paid)},
    }


def statement_line(line: RecordData, parts: Mapping[str, Document], titles: Mapping[str, str]
                   ) -> Document:
    """A line as its statement lists it; a day line with its chunk and its commitment to its parts, a line of a
    titled work with the work's title."""
    fields = {name: line[name] for name in LINE_FIELDS if line.get(name) is not None}
    if "artifact" in line:  # only day lines: every other line keeps the fields and bytes it always had
        fields.update(artifact=line["artifact"], parts=parts[line["line_id"]])
    work_id: str | None = line.get("work_id")
    if work_id is not None and work_id in titles:  # only titled works: an untitled work's line keeps its bytes
        fields["title"] = titles[work_id]
    return fields


def prepare_statement_index(view: LedgerView, index_batch_id: str, accounting_batch_id: str,
                            anchor_effect_id: str, *, read_evidence: ReadEvidence | None = None,
                            new_proof_id: Callable[[], str] = lambda: secrets.token_hex(16)
                            ) -> tuple[Unvalidated, bytes]:
    """The freeze step of a statement index over ``accounting_batch_id``, and the index artifact's bytes.
    ``read_evidence`` reads the chunks of the day lines it covers (an evidence store's ``get``)."""
    batch = accounting_batch(view, accounting_batch_id)
    lines = covered_lines(view, batch)
    _require(bool(lines), ErrorCode.INVALID_STATE, f"batch {accounting_batch_id} speaks for no recipient's lines")
    parts, titles = day_line_commitments(view, read_evidence, lines), work_titles(view, lines)
    names = display_names(view, lines)
    documents = [statement_document(new_proof_id(), recipient, batch, lines[recipient], parts, titles,
                                    names.get(recipient)) for recipient in sorted(lines)]
    tree = StatementTree.build(documents)
    artifact = index_artifact(index_batch_id, accounting_batch_id, tree)
    statements = sorted(({"statement_id": f"statement-{uuid.uuid4()}", "recipient_id": document["recipient_id"],
                          "accounting_batch_id": accounting_batch_id,
                          "artifact_hash": hashlib.sha256(canonical_bytes(document)).hexdigest(),
                          "public_proof_id": document["public_proof_id"],
                          "leaf_hash": statement_leaf_hash(document).hex()} for document in documents),
                        key=lambda statement: statement["statement_id"])
    step = {"action": "freeze", "artifact_ref": f"statement-index-{index_batch_id}",
            "artifact_hash": hashlib.sha256(artifact).hexdigest(), "count": len(statements),
            "anchor_effect_id": anchor_effect_id, "statements": statements, "statement_root": tree.root}
    return step, artifact


def day_line_commitments(view: LedgerView, read_evidence: ReadEvidence | None,
                         lines: dict[str, list[RecordData]]) -> dict[str, Document]:
    """Each covered day line's commitment to its parts, by line ID."""
    day_lines = [line for recipient_lines in lines.values() for line in recipient_lines if "artifact" in line]
    if not day_lines:
        return {}
    if read_evidence is None:
        raise LedgerError(ErrorCode.INVALID_STATE, "the batch speaks for day lines: their parts are read from the "
                                                   "evidence store, which was not given")
    return commitments(state_reader(view.get), read_evidence, day_lines)


def index_artifact(index_batch_id: str, accounting_batch_id: str, tree: StatementTree) -> bytes:
    """The index's private artifact: every statement in public-proof-ID order and the root, canonical JSON."""
    return canonical_bytes({"version": INDEX_ARTIFACT_VERSION, "index_batch_id": index_batch_id,
                            "accounting_batch_id": accounting_batch_id, "statements": list(tree.statements),
                            "root": tree.root})


def statement_file(view: LedgerView, read_evidence: ReadEvidence, statement_id: str,
                   chain: str) -> Document:
    """The statement file of docs/merkle.md for one statement, once its index is confirmed on chain."""
    statement, index, tree = confirmed_statement(view, read_evidence, statement_id)
    anchor = {"chain": chain, "transaction_hash": index["transaction_hash"], "ledger_version": index["ledger_version"]}
    return tree.statement_file(statement["public_proof_id"], anchor)


def parts_file(view: LedgerView, read_evidence: ReadEvidence, statement_id: str, line_id: str) -> Document:
    """The parts document of day line ``line_id`` of a statement whose index is confirmed: what its statement
    commits to, recomputed from the chunk's stored bytes and held to that commitment."""
    record, _, tree = confirmed_statement(view, read_evidence, statement_id)
    statement = tree.statements[tree.index_of(record["public_proof_id"])]
    stated = next((line for line in statement["lines"] if line["line_id"] == line_id and "parts" in line), None)
    if stated is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"statement {statement_id} lists no day line {line_id}")
    line = _required(view, line_key(line_id), f"day line {line_id}, which statement {statement_id} lists, is missing")
    [(_, document)] = day_line_documents(state_reader(view.get), read_evidence, [line])
    _require(commitment(document) == stated["parts"], ErrorCode.CONFLICTING_EVIDENCE,
             f"the parts of day line {line_id} are not the ones statement {statement_id} commits to")
    return document


def confirmed_statement(view: LedgerView, read_evidence: ReadEvidence, statement_id: str
                        ) -> tuple[RecordData, RecordData, StatementTree]:
    """A statement's record, its index's batch record and the index's tree, rebuilt from the index artifact, once
    the index is confirmed on chain."""
    statement = _required(view, statement_key(statement_id), f"statement {statement_id} does not exist")
    index = _required(view, batch_key(statement["index_batch_id"]),
                      f"statement index {statement['index_batch_id']} does not exist")
    root = (index["artifact"] or {}).get("statement_root")
    _require(root is not None, ErrorCode.INVALID_STATE,
             f"statement index {index['batch_id']} was frozen without a statement tree: it has no statement files")
    _require(index["state"] == "confirmed", ErrorCode.INVALID_STATE,
             f"statement index {index['batch_id']} is {index['state']}: its root is not anchored yet")
    artifact = orjson.loads(read_evidence(index["artifact"]["hash"]))
    tree = StatementTree.build(artifact["statements"])
    _require(tree.root == root == artifact["root"], ErrorCode.CONFLICTING_EVIDENCE,
             f"the index artifact of {index['batch_id']} does not make the frozen statement root")
    return statement, index, tree


def statements_of_index(view: LedgerView, index_batch_id: str) -> list[RecordData]:
    """The statements a statement index recorded, in statement-ID order."""
    found = (orjson.loads(raw)["data"] for _, raw in view.scan(STATE, b"statement/"))
    return [statement for statement in found if statement["index_batch_id"] == index_batch_id]
