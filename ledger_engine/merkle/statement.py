"""Recipient statements as leaves of their batch's tree, and the statement file a recipient verifies.

The leaf of a statement is ``UTF8(LEAF_DOMAIN) || JCS(statement)``, its leaf
hash ``SHA-256(0x00 || leaf)``: the one encoding every verifier follows (the
page at ``/verify/`` reads these constants from ``verifier_format()``). A
statement is a JSON object with at least:

- ``public_proof_id``: random, at least 16 characters, new every period; it
  orders the leaves and salts each leaf, so a sibling hash in a proof reveals
  nothing about another recipient and no position links a recipient across
  periods;
- ``recipient_id``, ``period`` (object), ``lines`` (array of objects),
  ``payment`` (object with a ``status`` string);
- ``recipient_name`` when the recipient has a display name: a string;
- every ``amount``, ``total`` or ``*_amount`` field, at any depth, a canonical
  u64 decimal string.

The tree holds a batch's statements sorted by public proof ID. The statement
file (version 2) is ``{"version", "statement", "leaf_index", "tree_size",
"leaf_hash", "path", "batch_root", "checkpoint", "anchor": {"chain",
"transaction_hash", "ledger_version"}}`` in canonical JSON, where
``checkpoint`` is the batch root and size as a signed note (``checkpoint``).
Checking one (docs/merkle.md gives the order) proves the statement is leaf
``leaf_index`` of the tree of ``tree_size`` statements with root
``batch_root``, and that Porto's pinned key signed that root and size; that
the root is the one anchored on chain is checked by hand against ``anchor``.
A version 1 file (no checkpoint) still reads, and is never verified.

A line naming a frozen chunk (``artifact``) is a day line and commits to its
parts (``parts: {"count", "digest"}``, ``day_line_parts.py``). Parts files
given beside a statement file are each checked against the day line they name
(``parts_file.py``); a statement whose day lines are given none still
verifies, and its ``parts`` check says they were not linked.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ledger_engine.canonical import MAX_JSON_DEPTH, canonical_bytes
from ledger_engine.merkle import tree
from ledger_engine.merkle.checkpoint import (
    MAX_NOTE_CHARS, Checkpoint, CheckpointSigner, VerifierKey, parse_note, verify_note,
)
from ledger_engine.merkle.day_line_parts import (
    ARTIFACT_FIELDS, DAY_LINE_FIELDS, PART_FIELDS, PARTS_DOMAIN, PARTS_FILE_FIELDS, PARTS_VERSION, REFERENCE_BY_ROLE,
)
from ledger_engine.merkle.document import (
    AMOUNT_PATTERN, FAILED, MAX_DOCUMENT_BYTES, NOT_MADE, PASSED, ProofRejected, Reason, encode_document, is_amount,
    join, read_count, read_document, read_hash, read_hashes, read_object, reject, rejected_proof, require_fields,
    require_version,
)
from ledger_engine.merkle.frontier import MemoryNodes
from ledger_engine.merkle.parts_file import MAX_PARTS_BYTES, check_day_lines, check_parts_files
from ledger_engine.open_json import Document, Report

FILE_VERSION = "porto:london:statement-file:v2"
UNSIGNED_FILE_VERSION = "porto:london:statement-file:v1"
LEAF_DOMAIN = "porto:london:statement:v1\n"
UNSIGNED_FILE_FIELDS = ("version", "statement", "leaf_index", "tree_size", "leaf_hash", "path", "batch_root", "anchor")
FILE_FIELDS = UNSIGNED_FILE_FIELDS[:-1] + ("checkpoint", "anchor")
# Every check a verifier reports, in the order it makes them; each is passed, failed or not made.
CHECKS = ("file", "leaf", "root", "checkpoint", "signature", "parts", "anchor")
# Checks a verdict of "verified" does not wait for: the chain, and the parts files a recipient may add.
OPTIONAL_CHECKS = ("parts", "anchor")
VERIFIED, REFUSED, NOT_VERIFIED = "verified", "failed", "not verified"
# Why a check was not made: no rejection, but no verdict of "verified" either (parts and anchor aside).
NO_CHECKPOINT = "NO_CHECKPOINT"
NO_VERIFIER_KEY = "NO_VERIFIER_KEY"
BY_HAND = "BY_HAND"
NO_DAY_LINES = "NO_DAY_LINES"
NO_PARTS_FILE = "NO_PARTS_FILE"
ANCHOR_FIELDS = ("chain", "transaction_hash", "ledger_version")
# Required statement fields and their JSON types, checked in this order.
STATEMENT_FIELDS = (("public_proof_id", "string"), ("recipient_id", "string"), ("period", "object"),
                    ("lines", "array"), ("payment", "object"))
OPTIONAL_STATEMENT_FIELDS = (("recipient_name", "string"),)
IDENTIFIER = r"[A-Za-z0-9._:@+=-]"
PROOF_ID_PATTERN = f"^{IDENTIFIER}{{16,200}}$"
RECIPIENT_PATTERN = f"^{IDENTIFIER}{{1,200}}$"
TRANSACTION_PATTERN = r"^0x[0-9a-f]{64}$"
MAX_CHAIN_LABEL = 200

_JSON_TYPES = {"string": str, "object": dict, "array": list}


def verifier_format(key: VerifierKey | None = None) -> Document:
    """Everything a second verifier needs to encode and check exactly as this one does, and the pinned key."""
    pinned = None if key is None else {"name": key.name, "key_hash": key.key_hash.hex(),
                                       "public_key": key.public_key.hex(), "encoded": key.encoded()}
    return {"file_version": FILE_VERSION, "unsigned_file_version": UNSIGNED_FILE_VERSION, "leaf_domain": LEAF_DOMAIN,
            "file_fields": list(FILE_FIELDS), "unsigned_file_fields": list(UNSIGNED_FILE_FIELDS),
            "checks": list(CHECKS), "verifier_key": pinned, "max_note_chars": MAX_NOTE_CHARS,
            "max_depth": MAX_JSON_DEPTH,
            "anchor_fields": list(ANCHOR_FIELDS), "statement_fields": [list(f) for f in STATEMENT_FIELDS],
            "optional_statement_fields": [list(f) for f in OPTIONAL_STATEMENT_FIELDS],
            "proof_id_pattern": PROOF_ID_PATTERN, "recipient_pattern": RECIPIENT_PATTERN,
            "amount_pattern": AMOUNT_PATTERN, "transaction_pattern": TRANSACTION_PATTERN,
            "max_chain_label": MAX_CHAIN_LABEL, "max_document_bytes": MAX_DOCUMENT_BYTES,
            "optional_checks": list(OPTIONAL_CHECKS), "parts": parts_format()}


def parts_format() -> Document:
    """The parts file's format, as ``verifier_format`` hands it to a second verifier."""
    return {"version": PARTS_VERSION, "domain": PARTS_DOMAIN, "file_fields": list(PARTS_FILE_FIELDS),
            "day_line_fields": list(DAY_LINE_FIELDS), "artifact_fields": list(ARTIFACT_FIELDS),
            "part_fields": list(PART_FIELDS), "reference_by_role": REFERENCE_BY_ROLE, "max_bytes": MAX_PARTS_BYTES}


def statement_leaf(statement: Document) -> bytes:
    """The leaf data of a statement: the domain, then the statement's canonical JSON."""
    check_statement(statement)
    return LEAF_DOMAIN.encode() + canonical_bytes(statement)


def statement_leaf_hash(statement: Document) -> bytes:
    return tree.leaf_hash(statement_leaf(statement))


def check_statement(statement: Any) -> None:
    """The shape every statement has; INVALID_STATEMENT names the first field that breaks it."""
    if type(statement) is not dict:
        reject(Reason.INVALID_STATEMENT, "statement", "a statement is a JSON object")
    for name, json_type in STATEMENT_FIELDS:
        if type(statement.get(name)) is not _JSON_TYPES[json_type]:
            reject(Reason.INVALID_STATEMENT, f"statement.{name}", f"a statement has a {json_type} {name}")
    for name, json_type in OPTIONAL_STATEMENT_FIELDS:
        if name in statement and type(statement[name]) is not _JSON_TYPES[json_type]:
            reject(Reason.INVALID_STATEMENT, f"statement.{name}", f"a statement's {name}, when given, is a {json_type}")
    _require_pattern(statement, "public_proof_id", PROOF_ID_PATTERN, "16 to 200 identifier characters")
    _require_pattern(statement, "recipient_id", RECIPIENT_PATTERN, "1 to 200 identifier characters")
    for position, line in enumerate(statement["lines"]):
        if type(line) is not dict:
            reject(Reason.INVALID_STATEMENT, f"statement.lines[{position}]", "a line is a JSON object")
    if type(statement["payment"].get("status")) is not str:
        reject(Reason.INVALID_STATEMENT, "statement.payment.status", "a payment has a status string")
    _check_amounts(statement, "statement")
    check_day_lines(statement)


def _require_pattern(statement: Document, name: str, pattern: str, what: str) -> None:
    if not re.fullmatch(pattern, statement[name]):
        reject(Reason.INVALID_STATEMENT, f"statement.{name}", f"{name} is {what}")


def is_amount_field(name: str) -> bool:
    return name in ("amount", "total") or name.endswith("_amount")


def _check_amounts(value: Any, field: str) -> None:
    if type(value) is list:
        for position, item in enumerate(value):
            _check_amounts(item, f"{field}[{position}]")
    elif type(value) is dict:
        for key in sorted(value):
            inner = join(field, key)
            if is_amount_field(key) and not is_amount(value[key]):
                reject(Reason.INVALID_STATEMENT, inner, "an amount is a canonical unsigned 64-bit decimal string")
            _check_amounts(value[key], inner)


@dataclass(frozen=True)
class StatementTree:
    """One batch's statements in public-proof-ID order, and their tree."""

    statements: tuple[Document, ...]
    nodes: MemoryNodes

    @classmethod
    def build(cls, statements: Sequence[Document]) -> "StatementTree":
        for statement in statements:
            check_statement(statement)
        ordered = tuple(sorted(statements, key=lambda s: s["public_proof_id"]))
        ids = [s["public_proof_id"] for s in ordered]
        if len(set(ids)) != len(ids):
            reject(Reason.INVALID_STATEMENT, "statement.public_proof_id", "two statements share a public proof ID")
        if not ordered:
            reject(Reason.INVALID_STATEMENT, "statement", "a statement tree has at least one statement")
        return cls(ordered, MemoryNodes.from_leaf_hashes([statement_leaf_hash(s) for s in ordered]))

    @property
    def size(self) -> int:
        return len(self.statements)

    @property
    def root(self) -> str:
        """The batch root (hex): what the statement index anchors."""
        return self.nodes.root().hex()

    def index_of(self, public_proof_id: str) -> int:
        for index, statement in enumerate(self.statements):
            if statement["public_proof_id"] == public_proof_id:
                return index
        raise KeyError(public_proof_id)

    def statement_file(self, public_proof_id: str, anchor: Document,
                       signer: CheckpointSigner | None = None) -> Document:
        """The file one recipient receives once the root is anchored by ``anchor``'s transaction, signed by
        ``signer`` (without one, the unsigned version 1 body the console signs as it hands the file out)."""
        index = self.index_of(public_proof_id)
        document = {
            "version": UNSIGNED_FILE_VERSION,
            "statement": copy.deepcopy(self.statements[index]),
            "leaf_index": index,
            "tree_size": self.size,
            "leaf_hash": self.nodes(0, index).hex(),
            "path": [h.hex() for h in tree.inclusion_proof(self.nodes, index, self.size)],
            "batch_root": self.root,
            "anchor": anchor,
        }
        if signer is not None:
            return sign_statement_file(document, signer)
        verify_statement_file(document)
        return document


def sign_statement_file(document: Document, signer: CheckpointSigner) -> Document:
    """A version 1 file as version 2: the same fields and the checkpoint of its root and size, signed."""
    require_version(document, (UNSIGNED_FILE_VERSION,))
    checkpoint = Checkpoint(signer.name, document["tree_size"], bytes.fromhex(document["batch_root"]))
    signed = {**document, "version": FILE_VERSION, "checkpoint": signer.sign(checkpoint)}
    verify_statement_file(signed, signer.verifier_key)
    return signed


def statement_file_bytes(document: Document) -> bytes:
    """The bytes to hand a recipient: canonical JSON and a newline."""
    return encode_document(document)


def verify_statement_file(raw: bytes | Document, key: VerifierKey | None = None,
                          parts_files: Sequence[bytes] = ()) -> Report:
    """``check_statement_file``'s verdict; ProofRejected naming the first check that failed."""
    verdict = check_statement_file(raw, key, parts_files)
    if verdict["verdict"] == REFUSED:
        raise ProofRejected(Reason(verdict["reason"]), verdict["field"], verdict["detail"])
    return verdict


def check_statement_file(raw: bytes | Document, key: VerifierKey | None = None,
                         parts_files: Sequence[bytes] = ()) -> Report:
    """Every check in ``CHECKS`` order, each passed, failed or not made, and the verdict.

    "verified" needs every check passed but the optional ones: above all the checkpoint's signature by
    ``key``, the key the verifier pins. The anchor only the chain can answer; the parts check is made for the
    day lines ``parts_files`` are given for, each file's outcome and each day line's reported. A failed check
    ends the checking; later ones are not made. A file without a checkpoint, or a check without a key, is
    "not verified".
    """
    checks: list[dict[str, str]] = []
    linked: dict[str, list[Report]] = {"parts_files": [], "day_lines": []}
    try:
        verdict = _run_checks(raw, key, checks, parts_files, linked)
    except ProofRejected as error:
        _record(checks, FAILED, str(error.reason), error.proof_detail)
        while len(checks) < len(CHECKS):
            _record(checks, NOT_MADE, "", "not reached: an earlier check failed")
        return {"ok": False, "verdict": REFUSED, **error.as_dict(), "checks": checks, **linked}
    unmade = [check for check in checks if check["result"] == NOT_MADE and check["check"] not in OPTIONAL_CHECKS]
    outcome = {"verdict": NOT_VERIFIED, "reason": unmade[0]["reason"], "field": "checkpoint",
               "detail": unmade[0]["detail"]} if unmade else {"verdict": VERIFIED}
    return {"ok": not unmade, **outcome, **verdict, "checks": checks, **linked}


def _run_checks(raw: bytes | Document, key: VerifierKey | None, checks: list[dict[str, str]],
                parts_files: Sequence[bytes], linked: dict[str, list[Report]]) -> Report:
    document, checkpoint = _read_file(raw)
    _passed(checks, f"canonical JSON, version {document['version']}, every field present and well formed")
    statement, leaf_hash = document["statement"], bytes.fromhex(document["leaf_hash"])
    if statement_leaf_hash(statement) != leaf_hash:
        reject(Reason.LEAF_MISMATCH, "statement", "the statement does not hash to the leaf hash: it was changed")
    _passed(checks, f"the statement hashes to leaf hash {document['leaf_hash']}")
    try:
        tree.verify_inclusion(leaf_hash, document["leaf_index"], document["tree_size"],
                              [bytes.fromhex(h) for h in document["path"]], bytes.fromhex(document["batch_root"]))
    except tree.ProofError as error:
        raise rejected_proof(error, {Reason.INDEX_OUT_OF_RANGE: "leaf_index", Reason.PROOF_LENGTH: "path",
                                     Reason.ROOT_MISMATCH: "batch_root"}) from None
    _passed(checks, f"leaf {document['leaf_index']} of {document['tree_size']}, {len(document['path'])} hashes in "
                    f"the path, reaches batch root {document['batch_root']}")
    _check_checkpoint(document, checkpoint, key, checks)
    _check_parts(statement, parts_files, checks, linked)
    _record(checks, NOT_MADE, BY_HAND, check_by_hand(document))
    return {"version": document["version"], "public_proof_id": statement["public_proof_id"],
            "recipient_id": statement["recipient_id"], "leaf_index": document["leaf_index"],
            "tree_size": document["tree_size"], "leaf_hash": document["leaf_hash"],
            "batch_root": document["batch_root"], "anchor": document["anchor"],
            "origin": None if checkpoint is None else checkpoint.origin, "check_by_hand": check_by_hand(document)}


def _record(checks: list[dict[str, str]], result: str, reason: str, detail: str) -> None:
    """The outcome of the next check in ``CHECKS`` order."""
    checks.append({"check": CHECKS[len(checks)], "result": result, "reason": reason, "detail": detail})


def _passed(checks: list[dict[str, str]], detail: str) -> None:
    _record(checks, PASSED, "", detail)


def _check_checkpoint(document: Document, checkpoint: Checkpoint | None, key: VerifierKey | None,
                      checks: list[dict[str, str]]) -> None:
    if checkpoint is None:
        for _ in ("checkpoint", "signature"):
            _record(checks, NOT_MADE, NO_CHECKPOINT, "the file carries no signed checkpoint (a version 1 file): "
                                                     "nothing vouches for its batch root")
        return
    if (checkpoint.size, checkpoint.root.hex()) != (document["tree_size"], document["batch_root"]):
        reject(Reason.CHECKPOINT_MISMATCH, "checkpoint", f"the checkpoint signs {checkpoint.size} statements under "
                                                         f"root {checkpoint.root.hex()}, not this file's")
    _passed(checks, f"the checkpoint of {checkpoint.origin} is this file's root and size")
    if key is None:
        _record(checks, NOT_MADE, NO_VERIFIER_KEY, "no verifier key is pinned, so nobody's signature could be checked")
        return
    verify_note(document["checkpoint"], key)
    _passed(checks, f"signed by the pinned key {key.name} ({key.key_hash.hex()})")


def _check_parts(statement: Document, parts_files: Sequence[bytes], checks: list[dict[str, str]],
                 linked: dict[str, list[Report]]) -> None:
    """Each parts file against the statement's day lines; the first refused one fails the check."""
    linked.update(check_parts_files(statement, parts_files))
    refused = next((outcome for outcome in linked["parts_files"] if outcome["result"] == FAILED), None)
    if refused is not None:
        where = f"parts_files[{refused['file']}]"
        raise ProofRejected(Reason(refused["reason"]), f"{where}.{refused['field']}" if refused["field"] else where,
                            f"parts file {refused['file'] + 1}: {refused['detail']}")
    day_lines = linked["day_lines"]
    unlinked = [line for line in day_lines if line["result"] != PASSED]
    if not day_lines:
        _record(checks, NOT_MADE, NO_DAY_LINES, "the statement has no day lines, so it has no parts to check")
    elif unlinked:
        _record(checks, NOT_MADE, NO_PARTS_FILE, f"{len(unlinked)} of the statement's {len(day_lines)} day lines "
                                                 "were given no parts file: what they are made of was not checked")
    else:
        _passed(checks, f"each of the statement's {len(day_lines)} day lines is the sum of the parts its file "
                        "lists, the parts the statement commits to")


def _read_file(raw: bytes | Document) -> tuple[Document, Checkpoint | None]:
    """The file's fields, each checked for its shape in the documented order, and its checkpoint if it has one."""
    document = read_document(raw)
    version = require_version(document, (FILE_VERSION, UNSIGNED_FILE_VERSION))
    require_fields(document, FILE_FIELDS if version == FILE_VERSION else UNSIGNED_FILE_FIELDS)
    statement = read_object(document, "statement")
    read_count(document, "leaf_index", 0)
    read_count(document, "tree_size", 1)
    read_hash(document, "leaf_hash")
    read_hashes(document, "path")
    read_hash(document, "batch_root")
    checkpoint = parse_note(document["checkpoint"])[0] if version == FILE_VERSION else None
    _read_anchor(document)
    check_statement(statement)
    return document, checkpoint


def _read_anchor(document: Document) -> Document:
    anchor = read_object(document, "anchor")
    require_fields(anchor, ANCHOR_FIELDS, "anchor")
    chain = anchor["chain"]
    if type(chain) is not str or not 1 <= len(chain) <= MAX_CHAIN_LABEL:
        reject(Reason.MALFORMED, "anchor.chain", f"the chain is named in 1 to {MAX_CHAIN_LABEL} characters")
    if type(anchor["transaction_hash"]) is not str or not re.fullmatch(TRANSACTION_PATTERN, anchor["transaction_hash"]):
        reject(Reason.INVALID_HASH, "anchor.transaction_hash", "a transaction hash is 0x and 64 lowercase hex digits")
    read_count(anchor, "ledger_version", 0, "anchor")
    return anchor


def check_by_hand(document: Document) -> str:
    """What the recipient checks on the chain itself, which no offline verifier can reach."""
    anchor = document["anchor"]
    return (f"On {anchor['chain']}, transaction {anchor['transaction_hash']} (version {anchor['ledger_version']}) "
            f"must be Porto's committer calling commitments::anchor with hash {document['batch_root']} "
            f"and count {document['tree_size']}.")
