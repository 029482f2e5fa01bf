"""Day lines (docs/adr/0073, step 1): allocation lines without a budget, paid, released, stated and checked.

Nothing in the product writes a day line yet. ``TestDayLines`` (tests/support/fixture_commands.py) freezes
listener-days as the freeze will: each one's allocation sentinel claimed, its slice moved from its budget's
``unallocated`` to ``frozen``, one day line per recipient and role with its derived ID, and the postings.
"""

from __future__ import annotations

import hashlib
import json

import orjson
import pytest

from ledger_engine.canonical import canonical_bytes
from ledger_engine.checkpoint.export import ROWS_FILE, export_store
from ledger_engine.checkpoint.integrity import verify_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.domain.day_lines import day_line_id
from ledger_engine.domain.invariants import HOLDING_TERMS, budget_terms, equation_mismatches
from ledger_engine.errors import LedgerError
from ledger_engine.merkle.day_line_parts import PARTS_DOMAIN, PARTS_VERSION
from ledger_engine.selectors.statement_index import LINE_FIELDS, prepare_statement_index
from tests.money_allocation.world import FINANCE, FIRST_DAY, LISTENER, MoneyWorld
from tests.money_payouts.world import PayoutWorld
from tests.support import cli

DAY = FIRST_DAY + 2
# One chunk of one listener-day of budget-1: its 100_000 slice, split by recipient and role.
CHUNK_LINES = [("artist", "artist-a", 60_000), ("artist", "artist-b", 15_000), ("operator", "operator-x", 15_000),
               ("porto", None, 10_000)]
# The chunk's bytes as its artifact line: what a statement reads the day lines' parts from.
CHUNK_BYTES = canonical_bytes({
    "listener_id": LISTENER, "day": DAY, "budget_id": "budget-1", "amount": "100000",
    "revisions": {f"listener_day/{LISTENER}/{DAY}": 1, "ruleset/london-1": 1},
    "lines": [{"role": "artist", "recipient_id": "artist-a", "amount": "60000", "work_id": "work-1", "rights_version": 1},
              {"role": "artist", "recipient_id": "artist-b", "amount": "15000", "work_id": "work-1", "rights_version": 1},
              {"role": "operator", "recipient_id": "operator-x", "amount": "15000", "node_id": "node-1"},
              {"role": "porto", "recipient_id": None, "amount": "10000"}]}) + b"\n"
CHUNK_HASH = hashlib.sha256(CHUNK_BYTES).hexdigest()
ARTIST_A = day_line_id(DAY, 0, "artist", "artist-a")
OPERATOR_X = day_line_id(DAY, 0, "operator", "operator-x")
PORTO = day_line_id(DAY, 0, "porto", None)
# The fields of a budget record before any freeze: the demo's budgets have exactly these.
BUDGET_FIELDS = {"budget_id", "period_id", "listener_id", "asset", "days", "first_day", "funded", "additions",
                 "unallocated", "outstanding", "paid", "refunds_reversals", "lots", "funding_version",
                 "correlation_id", "created"}


def freeze(world: MoneyWorld, *, chunk: int = 0, day: int = DAY, slices=((LISTENER, "budget-1", 100_000),),
           lines=CHUNK_LINES) -> list[str]:
    outcome = world.submit_ok("TestDayLines", {
        "day": day, "chunk": chunk, "hash": CHUNK_HASH,
        "listener_days": [{"listener_id": listener, "budget_id": budget, "amount": str(amount)}
                          for listener, budget, amount in slices],
        "lines": [{"role": role, "recipient_id": recipient, "amount": str(amount)}
                  for role, recipient, amount in lines]})
    return outcome.result["data"]["line_ids"]


def forge(world: MoneyWorld, record_key: str, **changes) -> None:
    world.submit_ok("TestForgeRecord", {"record_key": record_key, "changes": changes})


def checked(world: MoneyWorld, check_id: str) -> dict:
    assert world.check(check_id).accepted
    return world.state("conservation")


@pytest.fixture
def payouts(world: MoneyWorld) -> PayoutWorld:
    """listener-1's first two days allocated by AllocateListenerDay, its third frozen into day lines."""
    payouts = PayoutWorld(world).setup()
    freeze(world)
    return payouts


# The derived ID.

def test_a_day_lines_id_is_derived_from_its_day_chunk_role_and_recipient():
    assert day_line_id(20_727, 0, "artist", "artist-a") == "dayline-2e8781a60397d2fc96cd2167602c8c69"
    assert day_line_id(20_727, 3, "porto", None) == "dayline-96e28ef57c8ff206a96e66f006809adc"
    jcs = json.dumps([20_727, 3, "operator", "operator-x"], separators=(",", ":")).encode()
    assert day_line_id(20_727, 3, "operator", "operator-x") == \
        "dayline-" + hashlib.sha256(b"porto:london:day-line:v1\n" + jcs).hexdigest()[:32]
    variants = {day_line_id(20_727, 0, "artist", "artist-a"), day_line_id(20_728, 0, "artist", "artist-a"),
                day_line_id(20_727, 1, "artist", "artist-a"), day_line_id(20_727, 0, "operator", "artist-a"),
                day_line_id(20_727, 0, "artist", "artist-b")}
    assert len(variants) == 5


# The budget equation with ``frozen``.

def test_frozen_is_absent_until_a_freeze_moves_it_and_counts_as_zero(funded: MoneyWorld):
    funded.allocate_day_one()
    allocated = funded.state("budget/budget-1")
    assert "frozen" not in allocated and budget_terms(allocated)["frozen"] == 0
    assert "frozen" in HOLDING_TERMS and equation_mismatches("budget/budget-1", allocated) == []

    assert freeze(funded) == [ARTIST_A, day_line_id(DAY, 0, "artist", "artist-b"), OPERATOR_X, PORTO]
    budget = funded.state("budget/budget-1")
    assert (budget["frozen"], budget["unallocated"]) == ("100000", str(int(allocated["unallocated"]) - 100_000))
    assert {term: budget[term] for term in ("outstanding", "paid", "refunds_reversals")} == \
        {term: allocated[term] for term in ("outstanding", "paid", "refunds_reversals")}
    terms = budget_terms(budget)
    assert terms["funded"] + terms["additions"] == sum(terms[term] for term in HOLDING_TERMS)
    assert funded.owner.get("unique", f"allocation/{LISTENER}/{DAY:020d}").data == {
        "budget_id": "budget-1", "amount": "100000", "artifact": {"day": DAY, "chunk": 0, "hash": CHUNK_HASH}}


def test_a_freeze_claims_the_sentinel_allocate_listener_day_claims(funded: MoneyWorld):
    freeze(funded, day=FIRST_DAY)
    funded.assert_rejected_without_change("ALREADY_ALLOCATED", lambda: funded.allocate(
        LISTENER, FIRST_DAY, "budget-1"))


def test_a_day_line_is_an_allocation_line_without_a_budget(funded: MoneyWorld):
    freeze(funded)
    line = funded.state(f"allocation_line/{ARTIST_A}")
    assert {name: line[name] for name in ("listener_id", "budget_id", "day", "role", "recipient_id", "amount",
                                          "status", "artifact")} == {
        "listener_id": None, "budget_id": None, "day": DAY, "role": "artist", "recipient_id": "artist-a",
        "amount": "60000", "status": "payable", "artifact": {"day": DAY, "chunk": 0, "hash": CHUNK_HASH}}
    assert funded.state(f"allocation_line/{PORTO}")["status"] == "paid"  # Porto's share, paid at once


def test_the_full_check_is_clean_with_frozen_days(funded: MoneyWorld):
    funded.allocate_day_one()
    freeze(funded)
    verdict = checked(funded, "check-1")
    assert (verdict["status"], verdict["mismatch_count"]) == ("clear", 0)


def test_a_forged_frozen_term_is_found_though_the_equation_still_holds(funded: MoneyWorld):
    freeze(funded)
    budget = funded.state("budget/budget-1")
    forge(funded, "budget/budget-1", frozen=str(int(budget["frozen"]) + 5),
          unallocated=str(int(budget["unallocated"]) - 5))
    verdict = checked(funded, "check-1")
    assert verdict["status"] == "blocked"
    assert [(m["subject"], m["check"]) for m in verdict["mismatches"]] == [("budget/budget-1", "frozen")]
    assert "frozen 100005 != records 100000" in verdict["mismatches"][0]["detail"]


def test_a_forged_frozen_term_alone_breaks_the_equation(funded: MoneyWorld):
    freeze(funded)
    forge(funded, "budget/budget-1", frozen="100001")
    verdict = checked(funded, "check-1")
    assert {(m["subject"], m["check"]) for m in verdict["mismatches"]} == {
        ("budget/budget-1", "equation"), ("budget/budget-1", "frozen")}


@pytest.mark.parametrize(("line", "changes", "check", "detail"), [
    ("day", {"artifact": {"day": DAY, "chunk": 1, "hash": CHUNK_HASH}}, "day_line", "its ID is not the derived"),
    ("day", {"artifact": {"day": DAY, "chunk": 0, "hash": "not-a-hash"}}, "day_line", "is not a SHA-256"),
    ("day", {"artifact": {"day": DAY, "chunk": 0}}, "day_line", "artifact is {day, chunk, hash}"),
    ("day", {"listener_id": LISTENER}, "day_line", "a day line has no listener"),
    ("day", {"day": DAY + 1}, "day_line", "is not its artifact's day"),
    ("ordinary", {"budget_id": None}, "day_line", "a line without a budget must be a day line"),
    ("ordinary", {"artifact": {"day": FIRST_DAY, "chunk": 0, "hash": CHUNK_HASH}}, "budget", "names no artifact"),
])
def test_the_full_check_holds_each_line_to_its_budget_or_its_artifact(funded: MoneyWorld, line, changes, check,
                                                                        detail):
    funded.allocate_day_one()
    freeze(funded)
    subject = f"allocation_line/{ARTIST_A if line == 'day' else 'l-0'}"
    assert checked(funded, "check-0")["status"] == "clear"
    forge(funded, subject, **changes)
    verdict = checked(funded, "check-1")
    assert verdict["status"] == "blocked"
    assert any((m["subject"], m["check"]) == (subject, check) and detail in m["detail"]
               for m in verdict["mismatches"]), verdict["mismatches"]


# Paying, releasing and stating day lines.

def test_a_payout_run_reserves_pays_and_confirms_day_lines_moving_no_budget_term(payouts: PayoutWorld):
    statements = payouts.confirmed_statements(["artist-a"])
    assert payouts.index(f"payable_line/artist-a/{ARTIST_A}")["artifact"]["hash"] == CHUNK_HASH
    before = payouts.state("budget/budget-1")
    ordinary = payouts.payable_line_ids("operator-x")
    assert OPERATOR_X in ordinary and len(ordinary) > 1  # the operator's allocated lines and its day line
    assert payouts.prepare("run-9", {"artist-a": [ARTIST_A]}).accepted
    assert payouts.approve("run-9", statements).accepted
    line = payouts.state(f"allocation_line/{ARTIST_A}")
    assert (line["status"], line["run_id"], line["payment_id"]) == ("reserved", "run-9", "run-9.artist-a")
    assert payouts.index(f"payable_line/artist-a/{ARTIST_A}") is None

    payouts.pay("run-9.artist-a", "attempt-9")
    assert payouts.state("payment/run-9.artist-a")["state"] == "confirmed"
    assert payouts.state(f"allocation_line/{ARTIST_A}")["status"] == "paid"
    assert payouts.state("budget/budget-1") == before  # paying a day line moves no budget term
    assert payouts.index(f"recipient_line/artist-a/{DAY:020d}/{ARTIST_A}")["status"] == "paid"
    assert checked(payouts.money, "check-paid")["status"] == "clear"


def test_a_payment_of_ordinary_and_day_lines_moves_only_the_ordinary_lines_budget_terms(payouts: PayoutWorld):
    statements = payouts.confirmed_statements(["operator-x"])
    lines = payouts.payable_line_ids("operator-x")
    before = payouts.state("budget/budget-1")
    ordinary = sum(int(payouts.state(f"allocation_line/{line_id}")["amount"]) for line_id in lines
                   if line_id != OPERATOR_X)
    assert payouts.prepare("run-9", {"operator-x": lines}).accepted
    assert payouts.approve("run-9", statements).accepted
    payouts.pay("run-9.operator-x", "attempt-9")
    after = payouts.state("budget/budget-1")
    assert (int(after["outstanding"]), int(after["paid"])) == (int(before["outstanding"]) - ordinary,
                                                               int(before["paid"]) + ordinary)
    assert after["frozen"] == before["frozen"] == "100000"
    assert checked(payouts.money, "check-paid")["status"] == "clear"


def test_cancelling_a_run_releases_its_day_lines(payouts: PayoutWorld):
    statements = payouts.confirmed_statements(["artist-a", "operator-x"])
    assert payouts.prepare("run-9", {"artist-a": [ARTIST_A], "operator-x": [OPERATOR_X]}).accepted
    assert payouts.approve("run-9", statements).accepted
    assert payouts.cancel("run-9").accepted
    for recipient, line_id in (("artist-a", ARTIST_A), ("operator-x", OPERATOR_X)):
        line = payouts.state(f"allocation_line/{line_id}")
        assert (line["status"], line["run_id"], line["payment_id"]) == ("payable", None, None)
        assert payouts.index(f"payable_line/{recipient}/{line_id}") is not None
    assert checked(payouts.money, "check-cancelled")["status"] == "clear"


def test_a_statement_lists_the_day_lines_its_batch_speaks_for(payouts: PayoutWorld):
    payouts.anchor("allocation-batch-9", payouts.batch("allocation-batch-9", "allocation"))
    prepared = {"action": "prepare", "kind": "statement_index", "window_start_ms": 0, "window_end_ms": 10}
    assert payouts.submit("FreezeArtifact", {"batch_id": "index-9", "step": prepared}, actor=FINANCE).accepted
    with pytest.raises(LedgerError) as refused:
        payouts.owner.read(lambda view: prepare_statement_index(view, "index-9", "allocation-batch-9", "index-9-anchor"))
    assert refused.value.code == "INVALID_STATE" and "evidence store" in refused.value.detail
    step, artifact = payouts.owner.read(lambda view: prepare_statement_index(
        view, "index-9", "allocation-batch-9", "index-9-anchor", read_evidence={CHUNK_HASH: CHUNK_BYTES}.__getitem__))
    statement = next(s for s in orjson.loads(artifact)["statements"] if s["recipient_id"] == "artist-a")
    parts = {"version": PARTS_VERSION, "day_line": {
        "line_id": ARTIST_A, "artifact": {"day": DAY, "chunk": 0, "hash": CHUNK_HASH}, "role": "artist",
        "recipient_id": "artist-a", "amount": "60000"},
        "count": 1, "parts": [{"position": 0, "lines": [{"work_id": "work-1", "amount": "60000"}]}]}
    assert {"line_id": ARTIST_A, "day": DAY, "role": "artist", "amount": "60000", "status": "payable",
            "artifact": {"day": DAY, "chunk": 0, "hash": CHUNK_HASH},
            "parts": {"count": 1, "digest": hashlib.sha256(PARTS_DOMAIN.encode() + canonical_bytes(parts)).hexdigest()}
            } in statement["lines"]
    ordinary = [line for line in statement["lines"] if line["line_id"] != ARTIST_A]
    assert ordinary and all(set(line) <= set(LINE_FIELDS) for line in ordinary)
    assert int(statement["total"]) == sum(int(line["amount"]) for line in statement["lines"])
    assert payouts.submit("FreezeArtifact", {"batch_id": "index-9", "step": step}, actor=FINANCE,
                          evidence=[step["artifact_hash"]]).accepted


# Corrections: not of a day line, in this step.

def test_a_correction_naming_a_day_line_is_refused(funded: MoneyWorld):
    freeze(funded)
    funded.assert_rejected_without_change("INVALID_STATE", lambda: funded.request_correction(
        "correction-9", "budget-1", reverses=[ARTIST_A]))
    outcome = funded.request_correction("correction-9", "budget-1", reverses=[ARTIST_A])
    assert "frozen listener-days are corrected through their day lines" in outcome.result["detail"]
    assert funded.state(f"allocation_line/{ARTIST_A}")["pending_correction"] is None


# Replay, verify, and histories without a freeze.

def test_replay_and_verify_reproduce_a_ledger_holding_day_lines(payouts: PayoutWorld, tmp_path):
    statements = payouts.confirmed_statements(["artist-a"])
    assert payouts.prepare("run-9", {"artist-a": [ARTIST_A]}).accepted
    assert payouts.approve("run-9", statements).accepted
    payouts.pay("run-9.artist-a", "attempt-9")
    head = payouts.owner.head()
    metadata = payouts.owner.with_checkpoint(lambda store: export_store(store, tmp_path / "export"))
    replayed = replay_export(tmp_path / "export", tmp_path / "replayed")
    assert (replayed["sequence"], replayed["entry_hash"]) == (head.sequence, head.entry_hash)
    assert replayed["logical_state_hash"] == metadata["logical_state_hash"]
    report = payouts.owner.with_checkpoint(verify_store)
    assert report["ok"] and report["logical_state_hash"] == metadata["logical_state_hash"]


def test_a_history_without_a_freeze_has_budgets_without_a_frozen_term(tmp_path):
    data = tmp_path / "ledger"
    cli.init_demo(data)
    # a demo of one day: its listener-days are allocated one by one (with more days, the last one is frozen)
    cli.submit(data, cli.write_stream(tmp_path / "demo.jsonl", cli.demo_lines(7, listeners=4, days=1)))
    cli.export(data, tmp_path / "export")
    rows = [orjson.loads(line) for line in (tmp_path / "export" / ROWS_FILE).read_bytes().splitlines()]
    budgets = [row["value"]["data"] for row in rows if row["key"].startswith("budget/")]
    lines = [row["value"]["data"] for row in rows if row["key"].startswith("allocation_line/")]
    assert budgets and any(line["status"] == "paid" and line["role"] != "porto" for line in lines)
    assert all(set(budget) == BUDGET_FIELDS for budget in budgets)
    assert all(line["budget_id"] is not None and "artifact" not in line for line in lines)
