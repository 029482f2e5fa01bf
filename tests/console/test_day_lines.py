"""Day lines on the console (docs/adr/0073, steps 1 and 3): each screen that shows or counts allocation lines shows a
day line's day and artifact where an ordinary line has a budget, and none of them fails on a line without one; a
recipient's statement files come with one parts file per day line, which the recipient's verifier checks.

The payout tests' world, with listener-1's third day frozen by the test-only ``TestDayLines``
(tests/support/fixture_commands.py), its chunk's bytes in the console's evidence store.
"""

from __future__ import annotations

import re

import orjson
import pytest
from django.test import Client

from ledger_engine.layout import STATE
from ledger_engine.merkle import check_statement_file
from ledger_engine.selectors.statement_index import prepare_statement_index
from porto_console.console.handles import seal
from porto_console.internal_api import credentials
from porto_console.ledger import gateway
from tests.merkle import checkpoint_keys
from tests.money_allocation.test_day_lines import ARTIST_A, CHUNK_BYTES, CHUNK_HASH, DAY, OPERATOR_X, freeze
from tests.money_allocation.world import FINANCE
from tests.money_payouts.test_statement_trees import anchor_root
from tests.console.recipients import unnamed

PAGES = ("/ledger/", "/ledger/payouts/", "/ledger/payouts/?status=all", "/ledger/payouts/prepare/",
         "/ledger/payouts/payments/", "/ledger/budgets/", "/ledger/budgets/payables/",
         "/ledger/accounting/trial-balance/")


@pytest.fixture
def frozen(payouts_world):
    freeze(payouts_world.money)
    return payouts_world


def paid_run(world, run_id: str = "run-9") -> str:
    """A run paying artist-a its day line, approved on a statement frozen after it, and confirmed."""
    statements = world.confirmed_statements(["artist-a"])
    assert world.prepare(run_id, {"artist-a": [ARTIST_A]}).accepted
    assert world.approve(run_id, statements).accepted
    world.pay(f"{run_id}.artist-a", "attempt-9")
    return run_id


def test_preparation_lists_each_recipients_day_lines_with_their_day_and_artifact(finance, frozen):
    page = finance[FINANCE].get("/ledger/payouts/prepare/").content.decode()
    row = page.split(f"<td>{unnamed('artist-a')}</td>")[1].split("</tr>")[0]
    assert "of which 1 day line:" in row and f"chunk 0, artifact <code title=\"{CHUNK_HASH}\">" in row
    assert f'title="day {DAY}"' in row
    ordinary = page.split(f"<td>{unnamed('artist-c')}</td>")[1].split("</tr>")[0]  # by AllocateListenerDay only
    assert "day line" not in ordinary


def test_a_run_shows_its_day_lines_day_and_artifact_and_its_other_lines_budget(finance, frozen):
    statements = frozen.confirmed_statements(["operator-x"])
    lines = frozen.payable_line_ids("operator-x")
    assert OPERATOR_X in lines and len(lines) > 1
    assert frozen.prepare("run-9", {"operator-x": lines}).accepted
    assert frozen.approve("run-9", statements).accepted
    page = finance[FINANCE].get(f"/ledger/payouts/{seal('run', 'run-9')}/").content.decode()
    assert page.count('<span class="day-line">day line of') == 1
    assert CHUNK_HASH[:12] in page and f'title="day {DAY}"' in page
    assert page.count("budget budget-1") == len(lines) - 1
    assert "budget None" not in page and "None" not in page.split('id="payments"')[1]


def test_every_screen_that_counts_lines_answers_with_a_day_line_paid(finance, frozen):
    run_id = paid_run(frozen)
    for path in (*PAGES, f"/ledger/payouts/{seal('run', run_id)}/",
                 f"/ledger/accounting/history/run/{seal('run', run_id)}/"):
        response = finance[FINANCE].get(path)
        assert response.status_code == 200, path
    payables = finance[FINANCE].get("/ledger/budgets/payables/").content.decode()
    assert f"<td>{unnamed('artist-a')}</td>" in payables


def test_the_budget_shows_its_frozen_term_on_the_holding_side(finance, frozen):
    budget = frozen.state("budget/budget-1")
    page = finance[FINANCE].get("/ledger/budgets/").content.decode()
    row = page.split("<td>budget-1</td>")[1].split("</tr>")[0]
    assert budget["frozen"] == "100000" and "frozen <span" in row and 'title="100000 minor units"' in row
    holding = sum(int(budget[term]) for term in ("unallocated", "outstanding", "paid", "refunds_reversals", "frozen"))
    assert f'<strong><span class="money" title="{holding} minor units">' in row
    assert 'class="check-ok">yes<' in row


def test_a_budget_no_freeze_touched_shows_no_frozen_term(finance, payouts_world):
    assert "frozen" not in payouts_world.state("budget/budget-1")
    row = finance[FINANCE].get("/ledger/budgets/").content.decode().split("<td>budget-1</td>")[1].split("</tr>")[0]
    assert "frozen" not in row and "unallocated <span" in row


# Statement files and parts files.

@pytest.fixture
def stated(frozen):
    """A statement index over everything allocated, its tree frozen from the ledger and the evidence, anchored."""
    evidence = gateway().evidence
    evidence.put(CHUNK_BYTES)
    frozen.anchor("allocation-batch-9", frozen.batch("allocation-batch-9", "allocation"))
    prepared = {"action": "prepare", "kind": "statement_index", "window_start_ms": 0, "window_end_ms": 10}
    assert frozen.submit("FreezeArtifact", {"batch_id": "index-9", "step": prepared}, actor=FINANCE).accepted
    step, artifact = frozen.owner.read(lambda view: prepare_statement_index(
        view, "index-9", "allocation-batch-9", "index-9-anchor", read_evidence=evidence.get))
    evidence.put(artifact)
    assert frozen.submit("FreezeArtifact", {"batch_id": "index-9", "step": step}, actor=FINANCE,
                         evidence=[step["artifact_hash"]]).accepted
    anchor_root(frozen, step, "index-9")
    return frozen


def statement_of(world, recipient_id: str) -> str:
    return next(row["data"]["statement_id"] for _, row in world.owner.scan(STATE, "statement/", limit=1_000)
                if (row["data"]["index_batch_id"], row["data"]["recipient_id"]) == ("index-9", recipient_id))


def test_a_statements_files_page_offers_one_parts_file_per_day_line_and_they_verify_with_its_file(finance, stated):
    client, statement_id = finance[FINANCE], statement_of(stated, "artist-a")
    handle = seal("statement", statement_id)
    page = client.get(f"/ledger/statements/{handle}/").content.decode()
    assert page.count('class="button parts-file"') == 1 and ARTIST_A in page
    statement = client.get(f"/ledger/statements/{handle}/file/")
    parts_url = re.search(r'<a class="button parts-file" href="([^"]+)"', page).group(1)
    parts = client.get(parts_url)
    assert parts.status_code == 200 and parts["Content-Disposition"] == \
        f'attachment; filename="day-line-parts-{ARTIST_A}.json"'
    document = orjson.loads(parts.content)
    assert (document["day_line"]["line_id"], document["count"]) == (ARTIST_A, 1)
    assert b"listener" not in parts.content and b"budget" not in parts.content
    verdict = check_statement_file(statement.content, checkpoint_keys.signer().verifier_key, [parts.content])
    assert verdict["verdict"] == "verified" and [line["result"] for line in verdict["day_lines"]] == ["passed"]
    prepare = client.get("/ledger/payouts/prepare/").content.decode()
    assert f'href="/ledger/statements/{handle}/"' in prepare


def test_a_parts_file_of_a_line_that_is_no_day_line_of_the_statement_is_refused_with_why(finance, stated):
    client, statement_id = finance[FINANCE], statement_of(stated, "artist-a")
    other = seal("statement-day-line", f"{statement_id}/{OPERATOR_X}")
    refused = client.get(f"/ledger/statement-parts/{other}/", follow=True)
    assert f"No parts file: statement {statement_id} lists no day line {OPERATOR_X}" in refused.content.decode()


def test_the_statement_worker_reads_the_same_parts_files(stated, db):
    statement_id = statement_of(stated, "operator-x")
    _, token = credentials.issue("statements-committer", "committer-1", ["RecordCommitmentObservation"])
    worker = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    served = worker.get(f"/internal/statements/{statement_id}/parts/{OPERATOR_X}")
    assert served.status_code == 200 and orjson.loads(served.content)["day_line"]["line_id"] == OPERATOR_X
    _, reader = credentials.issue("statements-reader", "dispatcher-1", ["ClaimEffect"])
    refused = Client(HTTP_AUTHORIZATION=f"Bearer {reader}").get(
        f"/internal/statements/{statement_id}/parts/{OPERATOR_X}")
    assert (refused.status_code, refused.json()["code"]) == (403, "COMMAND_NOT_ALLOWED")
