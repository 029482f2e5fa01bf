"""Statement indexes with a statement tree: built at the command boundary, checked by the rule, anchored by root."""

from __future__ import annotations

import copy

import pytest

from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import OUTBOX
from ledger_engine.merkle import verify_statement_file
from ledger_engine.merkle.statement import statement_file_bytes
from ledger_engine.selectors.statement_index import prepare_statement_index, statement_file, statements_of_index
from tests.money_payouts.world import COMMITTER, FINANCE, RECIPIENTS, PayoutWorld, digest, transaction_hash

CHAIN = "simulated chain 4"


@pytest.fixture
def accounted(payouts: PayoutWorld) -> PayoutWorld:
    payouts.anchor("allocation-batch-9", payouts.batch("allocation-batch-9", "allocation"))
    return payouts


def prepare(world: PayoutWorld, index_id: str = "statement-index-9") -> tuple[dict, bytes]:
    prepared = {"action": "prepare", "kind": "statement_index", "window_start_ms": 0, "window_end_ms": 10}
    assert world.submit("FreezeArtifact", {"batch_id": index_id, "step": prepared}, actor=FINANCE).accepted
    return world.owner.read(lambda view: prepare_statement_index(view, index_id, "allocation-batch-9", f"{index_id}-anchor"))


def freeze(world: PayoutWorld, step: dict, index_id: str = "statement-index-9"):
    return world.submit("FreezeArtifact", {"batch_id": index_id, "step": step}, actor=FINANCE,
                        evidence=[step["artifact_hash"]])


def anchor_root(world: PayoutWorld, step: dict, index_id: str = "statement-index-9") -> str:
    tx = transaction_hash("commitment", index_id)
    assert world.claim(f"{index_id}-anchor", actor=COMMITTER).accepted
    assert world.complete(f"{index_id}-anchor", "submitted", tx, actor=COMMITTER).accepted
    evidence = digest("commitment-evidence", index_id)
    outcome = world.submit("RecordCommitmentObservation", {
        "batch_id": index_id, "transaction_hash": tx, "artifact_hash": step["statement_root"], "outcome": "confirmed",
        "ledger_version": 77, "evidence_digest": evidence}, actor=COMMITTER, evidence=[evidence])
    assert outcome.accepted, outcome.result
    return tx


def test_the_index_anchors_its_statement_root_and_every_recipient_gets_a_verifying_file(accounted: PayoutWorld):
    step, artifact = prepare(accounted)
    assert freeze(accounted, step).accepted
    effect = accounted.owner.get(OUTBOX, "statement-index-9-anchor").data
    assert (effect["payload"]["artifact_hash"], effect["payload"]["count"]) == (step["statement_root"], len(RECIPIENTS))
    tx = anchor_root(accounted, step)
    statements = accounted.owner.read(lambda view: statements_of_index(view, "statement-index-9"))
    assert sorted(s["recipient_id"] for s in statements) == sorted(RECIPIENTS)
    evidence = {step["artifact_hash"]: artifact}
    for statement in statements:
        document = accounted.owner.read(
            lambda view: statement_file(view, evidence.__getitem__, statement["statement_id"], CHAIN))
        verdict = verify_statement_file(statement_file_bytes(document))
        assert (verdict["recipient_id"], verdict["batch_root"], verdict["tree_size"]) == (
            statement["recipient_id"], step["statement_root"], len(RECIPIENTS))
        assert document["anchor"] == {"chain": CHAIN, "transaction_hash": tx, "ledger_version": 77}
        lines = document["statement"]["lines"]
        assert lines and sum(int(line["amount"]) for line in lines) == int(document["statement"]["total"])
        assert document["statement"]["period"]["accounting_batch_id"] == "allocation-batch-9"


def test_each_period_draws_new_public_proof_ids(accounted: PayoutWorld):
    first, _ = prepare(accounted, "statement-index-9")
    second, _ = prepare(accounted, "statement-index-10")
    ids = [s["public_proof_id"] for s in first["statements"] + second["statements"]]
    assert len(set(ids)) == len(ids) and all(len(i) == 32 for i in ids)


def test_a_root_other_than_the_leaves_tree_or_a_changed_leaf_is_refused_and_changes_nothing(accounted: PayoutWorld):
    step, _ = prepare(accounted)
    wrong_root = {**step, "statement_root": digest("another root")}
    accounted.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: freeze(accounted, wrong_root))
    changed_leaf = copy.deepcopy(step)
    changed_leaf["statements"][0]["leaf_hash"] = digest("another leaf")
    accounted.rejects(ErrorCode.CONFLICTING_EVIDENCE, lambda: freeze(accounted, changed_leaf))
    missing_leaf = copy.deepcopy(step)
    del missing_leaf["statements"][0]["leaf_hash"]
    with pytest.raises(LedgerError) as raised:
        freeze(accounted, missing_leaf)
    assert raised.value.code == ErrorCode.INVALID_PAYLOAD
    assert freeze(accounted, step).accepted


def test_no_file_before_the_root_is_anchored_nor_for_an_index_without_a_tree(accounted: PayoutWorld):
    step, artifact = prepare(accounted)
    assert freeze(accounted, step).accepted
    statement_id = step["statements"][0]["statement_id"]
    with pytest.raises(LedgerError) as raised:
        accounted.owner.read(lambda view: statement_file(view, {}.__getitem__, statement_id, CHAIN))
    assert raised.value.code == ErrorCode.INVALID_STATE and "not anchored" in raised.value.detail
    legacy = accounted.confirmed_statements()[0]
    with pytest.raises(LedgerError) as raised:
        accounted.owner.read(lambda view: statement_file(view, {}.__getitem__, legacy, CHAIN))
    assert raised.value.code == ErrorCode.INVALID_STATE and "without a statement tree" in raised.value.detail
