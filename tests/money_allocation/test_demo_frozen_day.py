"""The demo allocates its last day as finance allocates a city's day: split, frozen into day lines, stated, paid.

The ledger is the one ``make run`` loads (``load_demo``: the default seed and size, its evidence stored first).
The earlier days are allocated listener-day by listener-day; the last one by one ``FreezeDayChunk``, whose bytes
``verify`` splits again from the replayed state. The statement index covers the day lines with their parts, so a
run over day lines is approved as any other.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.envelopes import build_envelope
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.integrity import verify_directory
from ledger_engine.demo import demo_genesis
from ledger_engine.demo.builder import DEMO_STEP_UP_KEY
from ledger_engine.demo.load import load_demo
from ledger_engine.domain.day_lines import DAY_LINE_ID_PREFIX
from ledger_engine.domain.step_up import with_proof
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import STATE, UNIQUE
from ledger_engine.merkle.day_line_parts import parts_total
from ledger_engine.selectors.statement_index import confirmed_statement, parts_file

APPROVER = "demo-finance-2"  # neither the preparer of the waiting run nor the approver of the address it pays


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """A stopped demo ledger at ``root/ledger``, its evidence at ``root/evidence``."""
    root = tmp_path_factory.mktemp("demo")
    with LedgerOwner.open(root / "ledger", genesis=demo_genesis()) as owner:
        load_demo(owner, EvidenceStore(root / "evidence"))
    return root


@pytest.fixture
def copy(demo: Path, tmp_path: Path) -> Path:
    """A copy of the demo ledger and its evidence that a test may change."""
    shutil.copytree(demo, tmp_path / "demo")
    return tmp_path / "demo"


def records(owner: LedgerOwner, prefix: str) -> list[dict]:
    return [row["data"] for _, row in owner.scan(STATE, prefix, limit=10_000)]


def test_the_last_day_is_frozen_in_one_chunk_and_the_listener_days_it_held_are_named(demo):
    with LedgerOwner.open(demo / "ledger") as owner:
        [request] = records(owner, "day_allocation/")
        [chunk] = records(owner, "day_chunk/")
        day = request["first_day"]
        assert request["status"] == "done" and request["last_day"] == day == chunk["day"]
        assert request["chunks_frozen"] == 1 and request["listener_days_frozen"] == chunk["listener_days"] > 0
        assert {refused["code"] for refused in request["refused"]} == {"NOT_FOUND", "INVALID_STATE"}
        closed = {row["listener_id"] for row in records(owner, "listener_day/") if row["day"] == day}
        frozen = closed - {refused["listener_id"] for refused in request["refused"]}
        assert len(frozen) == chunk["listener_days"]
        for listener_id in frozen:  # the freeze claimed each; no AllocateListenerDay did
            sentinel = owner.get(UNIQUE, f"allocation/{listener_id}/{day:020d}").data
            assert sentinel["artifact"] == {"day": day, "chunk": 0, "hash": chunk["hash"]}
        day_lines = [line for line in records(owner, "allocation_line/") if line["line_id"].startswith(DAY_LINE_ID_PREFIX)]
        assert sorted(line["line_id"] for line in day_lines) == sorted(r["line_id"] for r in chunk["recipients"])
        assert {line["status"] for line in day_lines} >= {"paid", "reserved", "payable"}
        # only the budgets the chunk moved gain the term a freeze writes
        assert {budget["budget_id"] for budget in records(owner, "budget/") if "frozen" in budget} == \
            {total["budget_id"] for total in chunk["budgets"]}


def test_every_statement_commits_to_its_day_lines_parts_as_the_chunk_holds_them(demo):
    evidence = EvidenceStore(demo / "evidence")
    with LedgerOwner.open(demo / "ledger") as owner:
        day_lines = {line["line_id"]: line for line in records(owner, "allocation_line/")
                     if line["line_id"].startswith(DAY_LINE_ID_PREFIX) and line["recipient_id"] is not None}
        stated = 0
        for statement in records(owner, "statement/"):
            for line in owner.read(lambda view: _statement_day_lines(view, evidence, statement)):
                document = owner.read(
                    lambda view: parts_file(view, evidence.get, statement["statement_id"], line["line_id"]))
                assert document["day_line"]["recipient_id"] == statement["recipient_id"]
                assert document["count"] > 0 and parts_total(document["parts"]) == int(line["amount"])
                stated += 1
        assert stated == len(day_lines)  # every recipient's day line is in their statement


def _statement_day_lines(view, evidence: EvidenceStore, statement: dict) -> list[dict]:
    """The day lines the statement lists, as its recipient reads them in the confirmed index."""
    record, _, tree = confirmed_statement(view, evidence.get, statement["statement_id"])
    document = tree.statements[tree.index_of(record["public_proof_id"])]
    return [line for line in document["lines"] if "parts" in line]


def test_verify_splits_the_frozen_day_again_and_refuses_a_chunk_whose_bytes_were_swapped(copy):
    evidence = EvidenceStore(copy / "evidence")
    assert verify_directory(copy / "ledger", evidence=evidence)["ok"] is True
    with LedgerOwner.open(copy / "ledger") as owner:
        [chunk] = records(owner, "day_chunk/")
    path = evidence.path_of(chunk["hash"])
    path.chmod(0o600)
    path.write_bytes(path.read_bytes().replace(b'"amount":"', b'"amount":"1', 1))
    with pytest.raises(LedgerError) as refused:
        verify_directory(copy / "ledger", evidence=evidence)
    assert refused.value.code == ErrorCode.CONFLICTING_EVIDENCE


def test_the_waiting_run_over_a_day_line_is_approved_against_the_statements_over_it(copy):
    with LedgerOwner.open(copy / "ledger") as owner:
        [run] = [run for run in records(owner, "payment_run/") if run["status"] == "prepared"]
        payments = run["frozen"]["payments"]
        line_ids = [line_id for payment in payments for line_id in payment["line_ids"]]
        assert any(line_id.startswith(DAY_LINE_ID_PREFIX) for line_id in line_ids)
        recipients = {payment["recipient_id"] for payment in payments}
        statement_ids = sorted(statement["statement_id"] for statement in records(owner, "statement/")
                               if statement["recipient_id"] in recipients)
        envelope = build_envelope("ApprovePayoutRun", {"run_id": run["run_id"], "run_hash": run["run_hash"],
                                                       "statement_ids": statement_ids},
                                  command_id=str(uuid.uuid4()), actor_id=APPROVER,
                                  admitted_at_ms=owner.admission_floor_ms() + 1_000)
        outcome = owner.submit(with_proof(envelope, DEMO_STEP_UP_KEY))
        assert outcome.accepted, outcome.result
        assert {owner.get(STATE, f"allocation_line/{line_id}").data["status"] for line_id in line_ids} == {"reserved"}
        assert owner.get(STATE, f"payment_run/{run['run_id']}").data["status"] == "approved"
