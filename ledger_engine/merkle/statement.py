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
- every ``amount``, ``total`` or ``*_amount`` field, at any depth, a canonical
  u64 decimal string.

The tree holds a batch's statements sorted by public proof ID. The statement
file is ``{"version", "statement", "leaf_index", "tree_size", "leaf_hash",
"path", "batch_root", "anchor": {"chain", "transaction_hash",
"ledger_version"}}`` in canonical JSON. Checking one (docs/merkle.md gives the
order) proves the statement is leaf ``leaf_index`` of the tree of
``tree_size`` statements with root ``batch_root``; that the root is the one
anchored on chain is checked by hand against ``anchor``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ledger_engine.canonical import canonical_bytes
from ledger_engine.merkle import tree
from ledger_engine.merkle.document import (
    MAX_DOCUMENT_BYTES, Reason, encode_document, join, read_count, read_document, read_hash, read_hashes, read_object, reject,
    rejected_proof, require_fields, require_version,
)
from ledger_engine.merkle.frontier import MemoryNodes

FILE_VERSION = "porto:london:statement-file:v1"
LEAF_DOMAIN = "porto:london:statement:v1\n"
FILE_FIELDS = ("version", "statement", "leaf_index", "tree_size", "leaf_hash", "path", "batch_root", "anchor")
ANCHOR_FIELDS = ("chain", "transaction_hash", "ledger_version")
# Required statement fields and their JSON types, checked in this order.
STATEMENT_FIELDS = (("public_proof_id", "string"), ("recipient_id", "string"), ("period", "object"),
                    ("lines", "array"), ("payment", "object"))
IDENTIFIER = r"[A-Za-z0-9._:@+=-]"
PROOF_ID_PATTERN = f"^{IDENTIFIER}{{16,200}}$"
RECIPIENT_PATTERN = f"^{IDENTIFIER}{{1,200}}$"
AMOUNT_PATTERN = r"^(0|[1-9][0-9]{0,19})$"
TRANSACTION_PATTERN = r"^0x[0-9a-f]{64}$"
U64_MAX = 2**64 - 1
MAX_CHAIN_LABEL = 200

_JSON_TYPES = {"string": str, "object": dict, "array": list}


def verifier_format() -> dict[str, Any]:
    """Everything a second verifier needs to encode and check exactly as this one does."""
    return {"file_version": FILE_VERSION, "leaf_domain": LEAF_DOMAIN, "file_fields": list(FILE_FIELDS),
            "anchor_fields": list(ANCHOR_FIELDS), "statement_fields": [list(f) for f in STATEMENT_FIELDS],
            "proof_id_pattern": PROOF_ID_PATTERN, "recipient_pattern": RECIPIENT_PATTERN,
            "amount_pattern": AMOUNT_PATTERN, "transaction_pattern": TRANSACTION_PATTERN,
            "max_chain_label": MAX_CHAIN_LABEL, "max_document_bytes": MAX_DOCUMENT_BYTES}


def statement_leaf(statement: dict[str, Any]) -> bytes:
    """The leaf data of a statement: the domain, then the statement's canonical JSON."""
    check_statement(statement)
    return LEAF_DOMAIN.encode() + canonical_bytes(statement)


def statement_leaf_hash(statement: dict[str, Any]) -> bytes:
    return tree.leaf_hash(statement_leaf(statement))


def check_statement(statement: Any) -> None:
    """The shape every statement has; INVALID_STATEMENT names the first field that breaks it."""
    if type(statement) is not dict:
        reject(Reason.INVALID_STATEMENT, "statement", "a statement is a JSON object")
    for name, json_type in STATEMENT_FIELDS:
        if type(statement.get(name)) is not _JSON_TYPES[json_type]:
            reject(Reason.INVALID_STATEMENT, f"statement.{name}", f"a statement has a {json_type} {name}")
    _require_pattern(statement, "public_proof_id", PROOF_ID_PATTERN, "16 to 200 identifier characters")
    _require_pattern(statement, "recipient_id", RECIPIENT_PATTERN, "1 to 200 identifier characters")
    for position, line in enumerate(statement["lines"]):
        if type(line) is not dict:
            reject(Reason.INVALID_STATEMENT, f"statement.lines[{position}]", "a line is a JSON object")
    if type(statement["payment"].get("status")) is not str:
        reject(Reason.INVALID_STATEMENT, "statement.payment.status", "a payment has a status string")
    _check_amounts(statement, "statement")


def _require_pattern(statement: dict[str, Any], name: str, pattern: str, what: str) -> None:
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
            if is_amount_field(key) and not _is_amount(value[key]):
                reject(Reason.INVALID_STATEMENT, inner, "an amount is a canonical unsigned 64-bit decimal string")
            _check_amounts(value[key], inner)


def _is_amount(value: Any) -> bool:
    return type(value) is str and re.fullmatch(AMOUNT_PATTERN, value) is not None and int(value) <= U64_MAX


@dataclass(frozen=True)
class StatementTree:
    """One batch's statements in public-proof-ID order, and their tree."""

    statements: tuple[dict[str, Any], ...]
    nodes: MemoryNodes

    @classmethod
    def build(cls, statements: Sequence[dict[str, Any]]) -> "StatementTree":
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

    def statement_file(self, public_proof_id: str, anchor: dict[str, Any]) -> dict[str, Any]:
        """The file one recipient receives, once the root is anchored by ``anchor``'s transaction."""
        index = self.index_of(public_proof_id)
        document = {
            "version": FILE_VERSION,
            "statement": copy.deepcopy(self.statements[index]),
            "leaf_index": index,
            "tree_size": self.size,
            "leaf_hash": self.nodes(0, index).hex(),
            "path": [h.hex() for h in tree.inclusion_proof(self.nodes, index, self.size)],
            "batch_root": self.root,
            "anchor": anchor,
        }
        verify_statement_file(document)
        return document


def statement_file_bytes(document: dict[str, Any]) -> bytes:
    """The bytes to hand a recipient: canonical JSON and a newline."""
    return encode_document(document)


def verify_statement_file(raw: bytes | dict[str, Any]) -> dict[str, Any]:
    """Check a statement file step by step; the verdict, or ProofRejected naming what failed."""
    document = read_document(raw)
    require_version(document, (FILE_VERSION,))
    require_fields(document, FILE_FIELDS)
    statement = read_object(document, "statement")
    leaf_index = read_count(document, "leaf_index", 0)
    tree_size = read_count(document, "tree_size", 1)
    leaf_hash = read_hash(document, "leaf_hash")
    path = read_hashes(document, "path")
    batch_root = read_hash(document, "batch_root")
    anchor = _read_anchor(document)
    check_statement(statement)
    if statement_leaf_hash(statement) != leaf_hash:
        reject(Reason.LEAF_MISMATCH, "statement", "the statement does not hash to the leaf hash: it was changed")
    try:
        tree.verify_inclusion(leaf_hash, leaf_index, tree_size, path, batch_root)
    except tree.ProofError as error:
        raise rejected_proof(error, {Reason.INDEX_OUT_OF_RANGE: "leaf_index", Reason.PROOF_LENGTH: "path",
                                     Reason.ROOT_MISMATCH: "batch_root"}) from None
    return {"ok": True, "version": FILE_VERSION, "public_proof_id": statement["public_proof_id"],
            "recipient_id": statement["recipient_id"], "leaf_index": leaf_index, "tree_size": tree_size,
            "leaf_hash": document["leaf_hash"], "batch_root": document["batch_root"], "anchor": anchor,
            "check_by_hand": check_by_hand(document)}


def _read_anchor(document: dict[str, Any]) -> dict[str, Any]:
    anchor = read_object(document, "anchor")
    require_fields(anchor, ANCHOR_FIELDS, "anchor")
    chain = anchor["chain"]
    if type(chain) is not str or not 1 <= len(chain) <= MAX_CHAIN_LABEL:
        reject(Reason.MALFORMED, "anchor.chain", f"the chain is named in 1 to {MAX_CHAIN_LABEL} characters")
    if type(anchor["transaction_hash"]) is not str or not re.fullmatch(TRANSACTION_PATTERN, anchor["transaction_hash"]):
        reject(Reason.INVALID_HASH, "anchor.transaction_hash", "a transaction hash is 0x and 64 lowercase hex digits")
    read_count(anchor, "ledger_version", 0, "anchor")
    return anchor


def check_by_hand(document: dict[str, Any]) -> str:
    """What the recipient checks on the chain itself, which no offline verifier can reach."""
    anchor = document["anchor"]
    return (f"On {anchor['chain']}, transaction {anchor['transaction_hash']} (version {anchor['ledger_version']}) "
            f"must be Porto's committer calling commitments::anchor with hash {document['batch_root']} "
            f"and count {document['tree_size']}.")
