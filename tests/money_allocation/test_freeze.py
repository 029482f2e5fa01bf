"""FreezeDayChunk (docs/adr/0073, step 2): a chunk of a day's artifact, frozen by the ledger's own actor.

The chunks here are built by the real day allocator (``application/day_allocator.py``) from a money world with
closed listener-days, and their payloads by ``freeze.chunk_payload``; they are submitted to the owner as the
``ledger-owner`` actor, which no account, genesis actor or credential can be, and which the gateway refuses.
"""

from __future__ import annotations

import copy
import hashlib

import pytest

from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.application.day_allocator import DayAllocator, DayArtifact
from ledger_engine.application.envelopes import build_envelope
from ledger_engine.application.pending import PendingBatch
from ledger_engine.domain.actors import LEDGER_OWNER
from ledger_engine.domain.allocation_artifact import read_back
from ledger_engine.domain.commands.money.freeze import chunk_payload
from ledger_engine.domain.day_lines import day_line_id
from ledger_engine.domain.invariants import budget_terms
from ledger_engine.domain.schema.money_allocation import day_chunk_key
from ledger_engine.domain.schema.streaming import listener_day_key
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.genesis import default_genesis, validate_genesis
from tests.conftest import GENESIS_ADMIN
from tests.money_allocation.world import FINANCE, FIRST_DAY, NODES, MoneyWorld
from tests.money_payouts.world import LISTENER, WORKS, PayoutWorld
from tests.money_payouts.world import NODES as PAYOUT_NODES
from tests.support.store import owner_dump

LISTENERS = {
    "listener-a": ({"work-1": 40_000, "work-3": 9_000}, {"node-1": 900, "node-2": 100}),
    "listener-b": ({"work-2": 1}, {}),
    "listener-c": ({"work-1": 7, "work-2": 11, "work-3": 13}, {"node-3": 5}),
}
BUDGETS = {listener: 3_000_000 + 7_919 * number for number, listener in enumerate(LISTENERS)}


@pytest.fixture
def day_one(world: MoneyWorld) -> MoneyWorld:
    """Three listeners' first day closed, each in a funded 30-day budget of its own."""
    assert world.lot("lot-1", sum(BUDGETS.values())).accepted
    for listener, budget in BUDGETS.items():
        world.period(f"period-{listener}", listener, days=30)
        assert world.fund(f"budget-{listener}", f"period-{listener}", {"lot-1": budget}).accepted
        works, served = LISTENERS[listener]
        world.closed_day(listener, FIRST_DAY, f"period-{listener}", works,
                         {node: (NODES[node], served_bytes) for node, served_bytes in served.items()})
    return world


BUDGET_IDS = [f"budget-{listener}" for listener in LISTENERS]


def close_second_day(world: MoneyWorld) -> None:
    for listener, (works, served) in LISTENERS.items():
        world.closed_day(listener, FIRST_DAY + 1, f"period-{listener}", works,
                         {node: (NODES[node], served_bytes) for node, served_bytes in served.items()})


def build(world: MoneyWorld, day: int = FIRST_DAY) -> DayArtifact:
    with DayAllocator(workers=1) as allocator:
        artifact = allocator.build(PendingBatch(world.owner.store), day)
    assert artifact.skipped == ()
    return artifact


def payload_of(artifact: DayArtifact, *, chunk: int = 0, request_id: str = "request-1") -> dict:
    payload = chunk_payload(request_id, artifact.day, chunk, read_back(artifact.content))
    assert payload["hash"] == artifact.digest
    return payload


def freeze(world: MoneyWorld, payload: dict, *, actor: str = LEDGER_OWNER, evidence: list[str] | None = None):
    return world.submit("FreezeDayChunk", payload, actor=actor,
                        evidence=[payload["hash"]] if evidence is None else evidence)


def checked(world: MoneyWorld, check_id: str) -> dict:
    assert world.check(check_id).accepted
    return world.state("conservation")


def forge(world: MoneyWorld, record_key: str, **changes) -> None:
    world.submit_ok("TestForgeRecord", {"record_key": record_key, "changes": changes})


# Freezing a chunk.

def test_a_chunk_frozen_by_the_owner_freezes_each_slice_into_day_lines_and_conserves(day_one):
    artifact = build(day_one)
    payload = payload_of(artifact)
    budgets_before = {listener: day_one.state(f"budget/budget-{listener}") for listener in LISTENERS}
    plans = {listener: day_one.plan(listener, FIRST_DAY, f"budget-{listener}") for listener in LISTENERS}

    outcome = freeze(day_one, payload)

    assert outcome.accepted, outcome.result
    assert payload["listener_day_count"] == 3 and payload["size"] == len(artifact.content)
    for listener, before in budgets_before.items():
        after, slice_amount = day_one.state(f"budget/budget-{listener}"), plans[listener].slice_amount
        assert after["frozen"] == str(slice_amount)
        assert int(after["unallocated"]) == int(before["unallocated"]) - slice_amount
        assert day_one.owner.get("unique", f"allocation/{listener}/{FIRST_DAY:020d}").data == {
            "budget_id": f"budget-{listener}", "amount": str(slice_amount),
            "artifact": {"day": FIRST_DAY, "chunk": 0, "hash": artifact.digest}}
    # One day line per (role, recipient): the sum of what each listener-day's own allocation would pay them.
    expected: dict[tuple[str, str | None], int] = {}
    for plan in plans.values():
        for line in plan.lines:
            expected[(line.role, line.recipient_id)] = expected.get((line.role, line.recipient_id), 0) + line.amount
    line_ids = outcome.result["data"]["line_ids"]
    assert len(line_ids) == len(expected)
    for (role, recipient), amount in expected.items():
        line = day_one.state(f"allocation_line/{day_line_id(FIRST_DAY, 0, role, recipient)}")
        assert (line["role"], line["recipient_id"], line["amount"], line["budget_id"], line["listener_id"]) == (
            role, recipient, str(amount), None, None)
        assert line["status"] == ("paid" if role == "porto" else "payable")
        assert "work_id" not in line and "node_id" not in line
    chunk = day_one.state(day_chunk_key(FIRST_DAY, 0))
    assert {name: chunk[name] for name in ("day", "chunk", "hash", "size", "request_id", "listener_days", "amount")} \
        == {"day": FIRST_DAY, "chunk": 0, "hash": artifact.digest, "size": len(artifact.content),
            "request_id": "request-1", "listener_days": 3, "amount": str(artifact.totals.amount)}
    assert [total["line_id"] for total in chunk["recipients"]] == line_ids
    verdict = checked(day_one, "check-1")
    assert (verdict["status"], verdict["mismatch_count"]) == ("clear", 0), verdict


def test_a_frozen_listener_day_is_not_allocated_again(day_one):
    assert freeze(day_one, payload_of(build(day_one))).accepted
    day_one.assert_rejected_without_change("ALREADY_ALLOCATED", lambda: day_one.allocate(
        "listener-b", FIRST_DAY, "budget-listener-b"))
    again = build_skipping(day_one, {listener: "ALREADY_ALLOCATED" for listener in LISTENERS})
    assert again.content == b""


def test_a_listener_day_allocated_since_the_split_refuses_the_whole_chunk(day_one):
    artifact = build(day_one)
    payload = payload_of(artifact)
    assert day_one.allocate("listener-b", FIRST_DAY, "budget-listener-b").accepted

    # Its listener-day and the policy are as they were: the sentinel the allocation claimed refuses it.
    day_one.assert_rejected_without_change("ALREADY_ALLOCATED", lambda: freeze(day_one, payload))
    # Split again, the chunk leaves it out and freezes the others.
    again = build_skipping(day_one, {"listener-b": "ALREADY_ALLOCATED"})
    assert freeze(day_one, payload_of(again)).accepted
    assert checked(day_one, "check-1")["status"] == "clear"


def test_a_budget_whose_funding_changed_since_the_split_refuses_the_whole_chunk_as_stale(day_one):
    payload = payload_of(build(day_one))
    budget = day_one.state("budget/budget-listener-c")
    more = [*budget["lots"], {**budget["lots"][0], "version": 2, "amount": "300000"}]
    forge(day_one, "budget/budget-listener-c", lots=more)  # a second funding version: every slice grows

    day_one.assert_rejected_without_change("STALE_REVISION", lambda: freeze(day_one, payload))
    assert "budget-listener-c" in freeze(day_one, payload).result["detail"]


def test_a_budget_moved_by_another_days_freeze_does_not_make_the_next_days_chunk_stale(day_one):
    """The owner splits day d+1 while it freezes day d: both name the same budgets, at the same slices."""
    close_second_day(day_one)
    first, second = payload_of(build(day_one)), payload_of(build(day_one, FIRST_DAY + 1))
    revisions = {budget: day_one.owner.get("state", f"budget/{budget}").revision for budget in BUDGET_IDS}

    assert freeze(day_one, first).accepted
    assert all(day_one.owner.get("state", f"budget/{budget}").revision > revisions[budget] for budget in BUDGET_IDS)
    assert freeze(day_one, second).accepted
    assert checked(day_one, "check-1")["status"] == "clear"


def build_skipping(world: MoneyWorld, skipped: dict[str, str]) -> DayArtifact:
    with DayAllocator(workers=1) as allocator:
        artifact = allocator.build(PendingBatch(world.owner.store), FIRST_DAY)
    assert {entry.listener_id: entry.code for entry in artifact.skipped} == skipped
    return artifact


def test_a_stale_revision_refuses_the_whole_chunk_and_changes_nothing(day_one):
    payload = payload_of(build(day_one))
    record = day_one.state(listener_day_key("listener-c", FIRST_DAY))
    forge(day_one, listener_day_key("listener-c", FIRST_DAY), closed_at_ms=record["closed_at_ms"])  # revision + 1
    day_one.assert_rejected_without_change("STALE_REVISION", lambda: freeze(day_one, payload))
    assert "listener_day/listener-c" in freeze(day_one, payload).result["detail"]
    assert all("frozen" not in day_one.state(f"budget/budget-{listener}") for listener in LISTENERS)


def test_a_chunk_naming_other_records_than_its_listener_days_is_refused(day_one):
    payload = payload_of(build(day_one))
    payload["listener_days"][0]["revisions"] = {"budget/budget-listener-b": 1}
    day_one.assert_rejected_without_change("INVALID_REFERENCE", lambda: freeze(day_one, payload))


@pytest.mark.parametrize("forgery", ["budget_total", "recipient_total", "count", "missing_budget"])
def test_totals_that_are_not_the_chunks_slices_are_refused(day_one, forgery):
    payload = payload_of(build(day_one))
    if forgery == "budget_total":
        payload["budgets"][0]["amount"] = str(int(payload["budgets"][0]["amount"]) + 1)
    elif forgery == "recipient_total":
        payload["recipients"][0]["amount"] = str(int(payload["recipients"][0]["amount"]) + 1)
    elif forgery == "count":
        payload["listener_day_count"] = 2
    else:
        payload["budgets"] = payload["budgets"][1:]
    day_one.assert_rejected_without_change("COUNT_MISMATCH", lambda: freeze(day_one, payload))


def test_a_chunk_whose_bytes_are_not_cited_evidence_is_refused(day_one):
    payload = payload_of(build(day_one))
    day_one.assert_rejected_without_change("INVALID_REFERENCE", lambda: freeze(day_one, payload, evidence=[]))


def test_a_chunk_is_frozen_once(day_one):
    payload = payload_of(build(day_one))
    assert freeze(day_one, payload).accepted
    day_one.assert_rejected_without_change("ALREADY_EXISTS", lambda: freeze(day_one, {**payload,
                                                                                        "request_id": "request-2"}))


def test_a_payload_out_of_artifact_order_or_over_the_chunk_limit_is_not_admitted(day_one):
    payload = payload_of(build(day_one))
    reordered = {**payload, "listener_days": payload["listener_days"][::-1]}
    too_many = {**payload, "listener_day_count": 2_501}
    porto_with_recipient = copy.deepcopy(payload)
    next(total for total in porto_with_recipient["recipients"] if total["role"] == "porto")["recipient_id"] = "x"
    for bad in (reordered, too_many, porto_with_recipient):
        with pytest.raises(LedgerError) as refused:
            freeze(day_one, bad)
        assert refused.value.code == ErrorCode.INVALID_PAYLOAD


# Who may freeze.

@pytest.mark.parametrize("actor", [FINANCE, GENESIS_ADMIN])
def test_no_other_actor_may_freeze_a_chunk(day_one, actor):
    payload = payload_of(build(day_one))
    day_one.assert_rejected_without_change("CAPABILITY_MISSING", lambda: freeze(day_one, payload, actor=actor))


def test_the_owners_actor_submits_nothing_else(day_one):
    day_one.assert_rejected_without_change("CAPABILITY_MISSING", lambda: day_one.check("check-owner",
                                                                                       actor=LEDGER_OWNER))


def test_the_gateway_refuses_the_owners_actor_and_commands_and_journals_nothing(day_one, tmp_path):
    payload = payload_of(build(day_one))
    gateway = CommandGateway(day_one.owner, tmp_path / "admission")
    gateway.evidence.put(build(day_one).content)
    before = owner_dump(day_one.owner)
    for command_type, body, actor in (("FreezeDayChunk", payload, FINANCE), ("FreezeDayChunk", payload, LEDGER_OWNER),
                                      ("CheckConservation", {"check_id": "check-9"}, LEDGER_OWNER)):
        with pytest.raises(LedgerError) as refused:
            gateway.execute(command_type, body, actor_id=actor, evidence=[payload["hash"]])
        assert refused.value.code == ErrorCode.OWNER_ONLY
        envelope = build_envelope(command_type, body, command_id="5f0c1a52-3c1e-4f4e-9d3b-1f2a3b4c5d6e",
                                  actor_id=actor, admitted_at_ms=day_one.owner.admission_floor_ms() + 1,
                                  evidence_hashes=[payload["hash"]])
        with pytest.raises(LedgerError) as refused:
            gateway.submit(envelope)
        assert refused.value.code == ErrorCode.OWNER_ONLY
    assert owner_dump(day_one.owner) == before
    assert list((tmp_path / "admission" / "envelopes").rglob("*.json")) == []


# No account is the ledger's own actor or holds its role.

def test_no_account_may_hold_the_owners_role_or_bear_its_name(world):
    with pytest.raises(LedgerError) as refused:
        world.owner.submit(world.envelopes.account("worker-9", "worker", ["ledger-owner"]))
    assert refused.value.code == ErrorCode.INVALID_PAYLOAD
    world.assert_rejected_without_change("ALREADY_EXISTS", lambda: world.owner.submit(
        world.envelopes.account(LEDGER_OWNER, "worker", ["ingest"])))


def test_no_staff_change_grants_the_owners_role(world):
    with pytest.raises(LedgerError) as refused:
        world.submit("RequestStaffChange", {"change_id": "change-9", "change": {
            "kind": "grant_role", "account_id": FINANCE, "role": "ledger-owner"}})
    assert refused.value.code == ErrorCode.INVALID_PAYLOAD


@pytest.mark.parametrize("actor", [{"actor_id": LEDGER_OWNER, "roles": ["ingest"]},
                                   {"actor_id": "worker-9", "roles": ["ledger-owner"]}])
def test_no_genesis_actor_is_the_owners_or_holds_its_role(actor):
    genesis = default_genesis()
    genesis["actors"] = [*genesis["actors"], actor]
    with pytest.raises(LedgerError) as refused:
        validate_genesis(genesis)
    assert refused.value.code == ErrorCode.VERIFICATION_FAILED


# The full check.

def test_the_full_check_holds_each_day_line_to_its_chunks_total(day_one):
    artifact = build(day_one)
    line_ids = freeze(day_one, payload_of(artifact)).result["data"]["line_ids"]
    artist = next(line_id for line_id in line_ids if day_one.state(f"allocation_line/{line_id}")["role"] == "artist")
    line = day_one.state(f"allocation_line/{artist}")
    forge(day_one, f"allocation_line/{artist}", amount=str(int(line["amount"]) + 1))
    verdict = checked(day_one, "check-1")
    assert verdict["status"] == "blocked"
    assert [(m["subject"], m["check"]) for m in verdict["mismatches"]] == [
        (day_chunk_key(FIRST_DAY, 0), "day_lines")], verdict["mismatches"]


def test_the_full_check_holds_each_chunks_totals_to_its_day_lines_and_sentinels(day_one):
    freeze(day_one, payload_of(build(day_one)))
    chunk = day_one.state(day_chunk_key(FIRST_DAY, 0))
    recipients = copy.deepcopy(chunk["recipients"])
    recipients[0]["amount"] = str(int(recipients[0]["amount"]) + 5)
    forge(day_one, day_chunk_key(FIRST_DAY, 0), recipients=recipients)
    verdict = checked(day_one, "check-1")
    assert {(m["subject"], m["check"]) for m in verdict["mismatches"]} == {
        (day_chunk_key(FIRST_DAY, 0), "day_lines"), (day_chunk_key(FIRST_DAY, 0), "totals")}
    budgets = copy.deepcopy(chunk["budgets"])
    budgets[0]["amount"], budgets[1]["amount"] = (str(int(budgets[0]["amount"]) + 1),
                                                  str(int(budgets[1]["amount"]) - 1))
    forge(day_one, day_chunk_key(FIRST_DAY, 0), recipients=chunk["recipients"], budgets=budgets, listener_days=2)
    verdict = checked(day_one, "check-2")
    assert {(m["subject"], m["check"]) for m in verdict["mismatches"]} == {
        (day_chunk_key(FIRST_DAY, 0), "budgets"), (day_chunk_key(FIRST_DAY, 0), "listener_days")}


def test_the_full_check_finds_a_day_line_of_no_recorded_chunk(day_one):
    artifact = build(day_one)
    line_ids = freeze(day_one, payload_of(artifact)).result["data"]["line_ids"]
    forge(day_one, day_chunk_key(FIRST_DAY, 0), hash=hashlib.sha256(b"another chunk").hexdigest())
    verdict = checked(day_one, "check-1")
    assert {m["subject"] for m in verdict["mismatches"] if m["check"] == "artifact"} >= {
        f"allocation_line/{line_id}" for line_id in line_ids}


# Paying frozen day lines.

def test_a_payout_run_pays_a_frozen_day_line(world):
    payouts = PayoutWorld(world).setup()
    day = FIRST_DAY + 2
    world.closed_day(LISTENER, day, "period-1", WORKS, PAYOUT_NODES)
    artifact = build(world, day)
    assert freeze(world, payload_of(artifact)).accepted
    artist_a = day_line_id(day, 0, "artist", "artist-a")
    statements = payouts.confirmed_statements(["artist-a"])
    before = payouts.state("budget/budget-1")
    assert payouts.prepare("run-9", {"artist-a": [artist_a]}).accepted
    assert payouts.approve("run-9", statements).accepted
    payouts.pay("run-9.artist-a", "attempt-9")
    assert payouts.state("payment/run-9.artist-a")["state"] == "confirmed"
    assert payouts.state(f"allocation_line/{artist_a}")["status"] == "paid"
    assert payouts.state("budget/budget-1") == before  # paying a day line moves no budget term
    assert budget_terms(before)["frozen"] == 100_000
    assert checked(payouts.money, "check-paid")["status"] == "clear"
