"""Statement-file vectors whose lines name their works' titles, in tests/merkle/vectors/titled_statements/.

The statements are the ledger's own leaves (``statement_document`` of selectors/statement_index.py): a line of
a titled work carries ``title`` beside its ``work_id``, a line of an untitled work and a node's line do not. One
title is markup, which a verifier must show as text. Both verifiers are tested against these files and
``expected.json`` with the test checkpoint key pinned; ``python -m tests.merkle.titled_statement_vectors`` writes
them again, and a test checks the committed files are what this module makes.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from ledger_engine.merkle.statement import StatementTree, statement_file_bytes
from ledger_engine.selectors.statement_index import statement_document
from tests.merkle import checkpoint_keys, statement_vectors
from tests.merkle.statement_vectors import ANCHOR, PERIOD, proof_id

DIRECTORY = Path(__file__).resolve().parent / "vectors" / "titled_statements"
BATCH = {"batch_id": PERIOD["accounting_batch_id"], "window_start_ms": PERIOD["window_start_ms"],
         "window_end_ms": PERIOD["window_end_ms"]}
DAY = 20_758  # 2026-11-01
MARKUP_TITLE = '<img src=x onerror="alert(1)"> & <b>Fado</b>'
TITLES = {"work-0012": "Saudade em Dó", "work-0031": MARKUP_TITLE}  # work-0044 has none


def line(number: int, role: str, amount: int, **source: str) -> dict[str, Any]:
    """An allocation line's record as the statement index reads it, with the fields a statement leaves out."""
    return {"line_id": f"line-{number:04d}", "day": DAY, "role": role, "amount": str(amount), "status": "payable",
            "listener_id": "listener-0001", "budget_id": "budget-0001", "correction_id": None, **source}


def statements() -> list[dict[str, Any]]:
    """An artist paid for two titled works and an untitled one, and a node operator: a tree of three."""
    artist = [line(1, "artist", 1_250_000, work_id="work-0012"), line(2, "artist", 416_667, work_id="work-0031"),
              line(3, "artist", 833_334, work_id="work-0044")]
    another = [line(4, "artist", 208_333, work_id="work-0012")]
    operator = [line(5, "operator", 95_000, node_id="node-lis-1")]
    return [statement_document(proof_id(label), recipient, BATCH, lines, titles=TITLES)
            for label, recipient, lines in (("titled-amara", "artist-amara", artist),
                                            ("titled-bento", "artist-bento", another),
                                            ("titled-lisbon", "operator-lisbon-1", operator))]


def vectors() -> dict[str, tuple[bytes, dict[str, Any]]]:
    """Every vector: file name -> (file bytes, expected verdict)."""
    tree, signer = StatementTree.build(statements()), checkpoint_keys.signer()
    titled = tree.statement_file(proof_id("titled-amara"), ANCHOR, signer)
    untitled = tree.statement_file(proof_id("titled-lisbon"), ANCHOR, signer)
    made = {name: (statement_file_bytes(document), {"verdict": "verified", "leaf_index": document["leaf_index"],
                                                    "tree_size": document["tree_size"]})
            for name, document in (("valid-titled-lines.json", titled), ("valid-untitled-neighbour.json", untitled))}
    refused = {"verdict": "failed", "reason": "LEAF_MISMATCH", "field": "statement"}
    renamed = copy.deepcopy(titled)
    renamed["statement"]["lines"][0]["title"] = "Saudade em Ré"
    dropped = copy.deepcopy(titled)
    del dropped["statement"]["lines"][1]["title"]
    made["tampered-title-changed.json"] = (statement_file_bytes(renamed), refused)
    made["tampered-title-dropped.json"] = (statement_file_bytes(dropped), refused)
    return made


def write() -> None:
    statement_vectors.write(vectors(), DIRECTORY)


def committed() -> dict[str, tuple[bytes, dict[str, Any]]]:
    return statement_vectors.committed(DIRECTORY)


if __name__ == "__main__":
    write()
