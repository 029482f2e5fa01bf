"""Statement-file vectors that name their recipients, in tests/merkle/vectors/named_statements/.

The statements are the ledger's own leaves (``statement_document`` of selectors/statement_index.py): a statement
of a recipient with a display name carries ``recipient_name`` beside its ``recipient_id``, an unnamed recipient's
does not. One name is markup, which a verifier must show as text; another is right to left, which it must isolate
from the ID beside it. Both verifiers are tested against these files and ``expected.json`` with the test
checkpoint key pinned; ``python -m tests.merkle.named_statement_vectors`` writes them again, and a test checks the
committed files are what this module makes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

from ledger_engine.merkle.statement import StatementTree, statement_file_bytes
from ledger_engine.selectors.statement_index import statement_document
from tests.merkle import checkpoint_keys, statement_vectors
from tests.merkle.statement_vectors import ANCHOR, proof_id
from tests.merkle.titled_statement_vectors import BATCH, line

DIRECTORY = Path(__file__).resolve().parent / "vectors" / "named_statements"
MARKUP_NAME = "<img src=x onerror=alert(1)> Fado & Co"
RIGHT_TO_LEFT_NAME = "ليلى النيل"
NAMES = {"artist-amara": MARKUP_NAME, "operator-lisbon-1": RIGHT_TO_LEFT_NAME}  # artist-bento has none


def statements() -> list[dict[str, Any]]:
    """Two named recipients and an unnamed one: a tree of three."""
    return [statement_document(proof_id(label), recipient, BATCH, lines, name=NAMES.get(recipient))
            for label, recipient, lines in (
                ("named-amara", "artist-amara", [line(1, "artist", 1_250_000, work_id="work-0012")]),
                ("named-bento", "artist-bento", [line(2, "artist", 208_333, work_id="work-0031")]),
                ("named-lisbon", "operator-lisbon-1", [line(3, "operator", 95_000, node_id="node-lis-1")]))]


def changed(document: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> bytes:
    """The file's bytes with its statement changed, and nothing else."""
    tampered = copy.deepcopy(document)
    change(tampered["statement"])
    return statement_file_bytes(tampered)


def vectors() -> dict[str, tuple[bytes, dict[str, Any]]]:
    """Every vector: file name -> (file bytes, expected verdict)."""
    tree, signer = StatementTree.build(statements()), checkpoint_keys.signer()
    named = tree.statement_file(proof_id("named-amara"), ANCHOR, signer)
    right_to_left = tree.statement_file(proof_id("named-lisbon"), ANCHOR, signer)
    unnamed = tree.statement_file(proof_id("named-bento"), ANCHOR, signer)
    made = {name: (statement_file_bytes(document), {"verdict": "verified", "leaf_index": document["leaf_index"],
                                                    "tree_size": document["tree_size"]})
            for name, document in (("valid-named.json", named), ("valid-right-to-left-name.json", right_to_left),
                                   ("valid-unnamed-neighbour.json", unnamed))}
    refused = {"verdict": "failed", "reason": "LEAF_MISMATCH", "field": "statement"}
    made["tampered-name-changed.json"] = (
        changed(named, lambda statement: statement.__setitem__("recipient_name", "Fado & Co")), refused)
    made["tampered-name-dropped.json"] = (changed(named, lambda statement: statement.pop("recipient_name")), refused)
    made["tampered-name-added.json"] = (
        changed(unnamed, lambda statement: statement.__setitem__("recipient_name", MARKUP_NAME)), refused)
    made["invalid-name-not-a-string.json"] = (
        changed(named, lambda statement: statement.__setitem__("recipient_name", 15)),
        {"verdict": "failed", "reason": "INVALID_STATEMENT", "field": "statement.recipient_name"})
    return made


def committed() -> dict[str, tuple[bytes, dict[str, Any]]]:
    """The files as committed, each with its expected verdict (``python -m`` this module writes them again)."""
    return statement_vectors.committed(DIRECTORY)


if __name__ == "__main__":
    statement_vectors.write(vectors(), DIRECTORY)
