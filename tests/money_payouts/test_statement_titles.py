"""A statement line of a titled work names the work's title; lines of untitled works, and nodes' lines, keep the
fields they always had. The statement file verifies with the ledger's own verifier, pinning the test key."""

from __future__ import annotations

import pytest

from ledger_engine.merkle import verify_statement_file
from ledger_engine.merkle.statement import check_statement_file, sign_statement_file, statement_file_bytes
from ledger_engine.selectors.statement_index import (
    LINE_FIELDS, statement_document, statement_file, statements_of_index,
)
from tests.merkle import checkpoint_keys
from tests.money_allocation.world import MoneyWorld, fixture_commands
from tests.money_payouts.test_statement_trees import anchor_root, freeze, prepare
from tests.money_payouts.world import PayoutWorld
from tests.support import payloads

CHAIN = "simulated chain 4"
TITLES = {"work-1": "Saudade em Dó", "work-2": '<b>Maré</b> & "Alta"'}  # work-3 is imported without a title


@pytest.fixture
def titled(owner, envelopes, monkeypatch) -> PayoutWorld:
    """The payout world, its catalogue importing work-1 and work-2 with titles; the allocation batch anchored."""
    untitled = payloads.work
    monkeypatch.setattr(payloads, "work", lambda work_id, *renditions: {
        **untitled(work_id, *renditions), **({"title": TITLES[work_id]} if work_id in TITLES else {})})
    with fixture_commands():
        world = PayoutWorld(MoneyWorld(owner, envelopes).setup()).setup()
    world.anchor("allocation-batch-9", world.batch("allocation-batch-9", "allocation"))
    return world


def anchored_statements(world: PayoutWorld) -> list[dict]:
    """Each recipient's signed statement file of an index over the allocation batch, once anchored."""
    step, artifact = prepare(world)
    assert freeze(world, step).accepted
    anchor_root(world, step)
    statements = world.owner.read(lambda view: statements_of_index(view, "statement-index-9"))
    evidence = {step["artifact_hash"]: artifact}
    return [sign_statement_file(world.owner.read(
        lambda view: statement_file(view, evidence.__getitem__, statement["statement_id"], CHAIN)),
        checkpoint_keys.signer()) for statement in statements]


def test_a_line_of_a_titled_work_names_its_title_and_the_file_verifies(titled: PayoutWorld):
    assert titled.state("work/work-1")["title"] == TITLES["work-1"] and "title" not in titled.state("work/work-3")
    files = anchored_statements(titled)
    lines = [line for document in files for line in document["statement"]["lines"]]
    assert {line["work_id"] for line in lines if "work_id" in line} == {"work-1", "work-2", "work-3"}
    for line in lines:
        assert line.get("title") == TITLES.get(line.get("work_id")), line
        assert set(line) - {"title"} <= set(LINE_FIELDS)
    for document in files:
        verdict = verify_statement_file(statement_file_bytes(document), checkpoint_keys.signer().verifier_key)
        assert (verdict["verdict"], verdict["recipient_id"]) == ("verified", document["statement"]["recipient_id"])


def test_a_changed_title_no_longer_verifies(titled: PayoutWorld):
    document = next(document for document in anchored_statements(titled)
                    if any("title" in line for line in document["statement"]["lines"]))
    line = next(line for line in document["statement"]["lines"] if "title" in line)
    line["title"] = line["title"] + " (remastered)"
    refused = check_statement_file(statement_file_bytes(document), checkpoint_keys.signer().verifier_key)
    assert (refused["verdict"], refused["reason"], refused["field"]) == ("failed", "LEAF_MISMATCH", "statement")


def test_without_titles_a_statement_is_the_leaf_it_was_before_titles():
    batch = {"batch_id": "allocation-batch-9", "window_start_ms": 0, "window_end_ms": 10}
    lines = [{"line_id": "l-1", "day": 1, "role": "artist", "amount": "5", "status": "payable", "work_id": "work-3",
              "listener_id": "listener-1", "budget_id": "budget-1"},
             {"line_id": "l-2", "day": 1, "role": "operator", "amount": "2", "status": "payable",
              "node_id": "node-1", "listener_id": "listener-1", "budget_id": "budget-1"}]
    before = statement_document("proof-0123456789abcdef", "artist-b", batch, lines)
    assert statement_document("proof-0123456789abcdef", "artist-b", batch, lines, {}, TITLES) == before
    assert [sorted(line) for line in before["lines"]] == [["amount", "day", "line_id", "role", "status", "work_id"],
                                                          ["amount", "day", "line_id", "node_id", "role", "status"]]
    titled_line = statement_document("proof-0123456789abcdef", "artist-b", batch, lines, {}, {"work-3": "Ínsula"})
    assert titled_line["lines"][0] == {**before["lines"][0], "title": "Ínsula"}
    assert titled_line["lines"][1] == before["lines"][1]
