"""Statement leaves, statement trees and the recipient's statement file, against the shared vectors."""

from __future__ import annotations

import copy

import pytest

from ledger_engine.canonical import canonical_bytes
from ledger_engine.merkle import ProofRejected, StatementTree, verify_statement_file
from ledger_engine.merkle import tree
from ledger_engine.merkle.statement import LEAF_DOMAIN, statement_leaf, statement_leaf_hash
from tests.merkle import oracle
from tests.merkle import checkpoint_keys
from tests.merkle.statement_vectors import (
    ANCHOR, DIRECTORY, committed, fixture_batch, other_batch, python_verdict, vectors,
)
from tests.support.cli import porto_ledger

COMMITTED = committed()


def test_the_committed_vectors_are_the_ones_the_fixture_batch_makes():
    assert {name: raw for name, (raw, _) in vectors().items()} == {name: raw for name, (raw, _) in COMMITTED.items()}
    assert {name: verdict for name, (_, verdict) in vectors().items()} == \
        {name: verdict for name, (_, verdict) in COMMITTED.items()}
    assert sorted(path.name for path in DIRECTORY.glob("*.json") if path.name != "expected.json") == sorted(COMMITTED)


@pytest.mark.parametrize("name", sorted(COMMITTED))
def test_the_python_verifier_reaches_the_expected_verdict(name):
    raw, expected = COMMITTED[name]
    assert python_verdict(raw) == expected


def test_a_statement_leaf_is_the_domain_then_the_canonical_statement():
    statement = fixture_batch()[0]
    assert statement_leaf(statement) == LEAF_DOMAIN.encode() + canonical_bytes(statement)
    reordered = dict(reversed(list(statement.items())))
    assert statement_leaf_hash(reordered) == tree.leaf_hash(statement_leaf(statement))


def test_the_tree_orders_statements_by_public_proof_id_and_its_root_is_the_rfc_root():
    built = StatementTree.build(fixture_batch())
    ids = [s["public_proof_id"] for s in built.statements]
    assert ids == sorted(ids)
    assert built.root == oracle.mth([statement_leaf(s) for s in built.statements]).hex()
    assert StatementTree.build(list(reversed(fixture_batch()))).root == built.root


def test_every_recipient_of_a_batch_gets_a_file_that_verifies():
    built, signer = StatementTree.build(fixture_batch()), checkpoint_keys.signer()
    for index, statement in enumerate(built.statements):
        document = built.statement_file(statement["public_proof_id"], ANCHOR, signer)
        verdict = verify_statement_file(document, signer.verifier_key)
        assert verdict["verdict"] == "verified" and verdict["ok"] is True
        assert (verdict["leaf_index"], verdict["tree_size"], verdict["batch_root"]) == (index, 7, built.root)
        assert ANCHOR["transaction_hash"] in verdict["check_by_hand"] and "count 7" in verdict["check_by_hand"]


def test_no_leaf_or_position_links_a_recipient_across_periods():
    now, later = StatementTree.build(fixture_batch()), StatementTree.build(other_batch())
    assert not {now.nodes(0, i) for i in range(now.size)} & {later.nodes(0, i) for i in range(later.size)}
    positions_now = [s["recipient_id"] for s in now.statements]
    positions_later = [s["recipient_id"] for s in later.statements]
    assert sorted(positions_now) == sorted(positions_later) and positions_now != positions_later


def test_a_batch_with_a_shared_proof_id_or_a_malformed_statement_is_not_built():
    twice = fixture_batch()
    twice[1]["public_proof_id"] = twice[0]["public_proof_id"]
    for statements, field in ((twice, "statement.public_proof_id"), ([], "statement"),
                              ([{**fixture_batch()[0], "total": 5}], "statement.total")):
        with pytest.raises(ProofRejected) as raised:
            StatementTree.build(statements)
        assert (raised.value.reason, raised.value.field) == ("INVALID_STATEMENT", field)


def test_a_file_handed_out_does_not_share_its_statement_with_the_tree():
    built = StatementTree.build(fixture_batch())
    document = built.statement_file(built.statements[0]["public_proof_id"], ANCHOR)
    before = copy.deepcopy(built.statements[0])
    document["statement"]["total"] = "1"
    assert built.statements[0] == before


