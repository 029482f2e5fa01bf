"""CloseDay and DecideHold: decided evidence only, eligibility on the closed session, a day closed once."""

from __future__ import annotations

import pytest

from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from tests.streaming.conftest import COORDINATOR, DAY, INGEST, OPS


def _closed(world, listener_id="listener-1", day=DAY):
    return world.state(schema.listener_day_key(listener_id, day))


def test_a_closed_day_has_the_contract_shape(world):
    world.work("work-2", duration_ms=40_000)
    assert world.health("node-1", inventory=["work-1-aac", "work-2-aac"]).accepted
    world.active_node("node-2", "operator-2", inventory=["work-1-aac", "work-2-aac"])
    session_one = world.listen(chunks=3)
    second = world.session(work_id="work-2")
    for index in range(4):
        world.served(second, index, node_id="node-2" if index % 2 else "node-1")
    assert world.close_session(second).accepted
    world.next_day()
    outcome = world.close_day()
    assert outcome.accepted, outcome.result
    closed = _closed(world)
    assert {k: closed[k] for k in ("listener_id", "day", "period_id", "status", "works", "nodes", "hold_free")} == {
        "listener_id": "listener-1", "day": DAY, "period_id": "period-1", "status": "closed",
        "works": [{"work_id": "work-1", "rights_version": 1, "listened_ms": 30_000},
                  {"work_id": "work-2", "rights_version": 1, "listened_ms": 40_000}],
        "nodes": [{"node_id": "node-1", "operator_id": "operator-1", "served_bytes": 5 * 160_000},
                  {"node_id": "node-2", "operator_id": "operator-2", "served_bytes": 2 * 160_000}],
        "hold_free": True}
    assert closed["closed_at_ms"] == world.now
    assert [s["session_id"] for s in closed["sessions"]] == [session_one, second]
    assert world.revision(schema.listener_day_key("listener-1", DAY)) == 1


def test_a_day_closes_once(world):
    world.listen()
    world.next_day()
    expected = world.stated(schema.listener_activity_key("listener-1", DAY))
    assert world.close_day().accepted
    world.rejected("DAY_CLOSED", "CloseDay", {"listener_id": "listener-1", "day": DAY, "period_id": "period-1"},
                   actor=COORDINATOR, expected=expected)


def test_closing_names_the_reviewed_activity_revision(world):
    world.listen()
    world.next_day()
    payload = {"listener_id": "listener-1", "day": DAY, "period_id": "period-1"}
    world.rejected("STALE_REVISION", "CloseDay", payload, actor=COORDINATOR)
    world.rejected("STALE_REVISION", "CloseDay", payload, actor=COORDINATOR,
                   expected=[{"cf": "state", "key": schema.listener_activity_key("listener-1", DAY), "revision": 1}])


def test_a_day_closes_only_after_it_ends_within_its_period(world):
    world.listen()
    assert world.close_day().code == "INVALID_TIME"
    world.next_day()
    assert world.open_period("period-2", "listener-2").accepted
    assert world.close_day(period_id="period-2").code == "INVALID_REFERENCE"
    assert world.close_day("listener-2", period_id="period-2", day=DAY - 1).code == "INVALID_REFERENCE"
    assert world.close_day("operator-1").code == "INVALID_REFERENCE"


def test_an_open_session_blocks_the_close(world):
    world.session()
    world.next_day()
    assert world.close_day().code == "INVALID_STATE"


def test_a_day_without_sessions_closes_empty(world):
    world.next_day()
    assert world.close_day().accepted
    closed = _closed(world)
    assert (closed["works"], closed["nodes"], closed["sessions"]) == ([], [], [])


def test_an_undecided_hold_blocks_the_close_until_decided(world):
    session_id = world.session()
    for index in range(3):
        world.served(session_id, index)
    replay = world.served(session_id, 0)
    assert world.close_session(session_id).accepted
    world.next_day()
    assert world.close_day().code == "HOLDS_OPEN"
    assert world.decide(replay["receipt_id"], "release").accepted
    assert world.close_day().accepted
    assert _closed(world)["works"] == [{"work_id": "work-1", "rights_version": 1, "listened_ms": 40_000}]


def test_a_rejected_hold_keeps_its_evidence_out(world):
    world.active_node("node-2", "operator-2", affiliated=["listener-1"])
    session_id = world.session()
    held = [world.served(session_id, index, node_id="node-2") for index in range(2)]
    world.served(session_id, 2, node_id="node-1")
    assert world.close_session(session_id).accepted
    for receipt in held:
        assert world.decide(receipt["receipt_id"], "reject", "fraud_suspected").accepted
    world.next_day()
    assert world.close_day().accepted
    closed = _closed(world)
    assert closed["nodes"] == [{"node_id": "node-1", "operator_id": "operator-1", "served_bytes": 160_000}]
    assert closed["works"] == []  # 10 s of counted listening: the session is not eligible
    assert closed["sessions"][0]["eligible"] is False


def test_eligibility_needs_thirty_seconds_of_counted_listening_in_the_session(world):
    world.work("work-2", duration_ms=60_000)
    assert world.health("node-1", inventory=["work-1-aac", "work-2-aac"]).accepted
    short = world.session(work_id="work-2")
    for index in range(2):
        world.served(short, index)
    assert world.close_session(short).accepted
    partial = world.session()
    for index in range(3):
        world.served(partial, index, bytes_served=100_000 if index == 2 else 160_000)
    assert world.close_session(partial).accepted
    world.next_day()
    assert world.close_day().accepted
    closed = _closed(world)
    assert [(s["listened_ms"], s["eligible"]) for s in closed["sessions"]] == [(20_000, False), (20_000, False)]
    assert closed["works"] == []
    assert closed["nodes"] == [{"node_id": "node-1", "operator_id": "operator-1",
                                "served_bytes": 4 * 160_000 + 100_000}]


def test_peer_fills_never_reach_a_listener_day(world):
    world.admit("node-2")
    assert world.health("node-2").accepted
    fill = world.grant(node_id="node-1", destination_node_id="node-2")
    assert world.consume(fill).accepted
    world.listen()
    world.next_day()
    assert world.close_day().accepted
    assert _closed(world)["nodes"] == [{"node_id": "node-1", "operator_id": "operator-1",
                                        "served_bytes": 3 * 160_000}]


def test_a_late_receipt_is_held_late_and_never_changes_the_closed_day(world):
    session_id = world.session()
    late_grant = world.grant(session_id, chunk_index=2)
    assert world.consume(late_grant).accepted
    world.served(session_id, 0)
    world.served(session_id, 1)
    assert world.close_session(session_id).accepted
    world.next_day()
    assert world.close_day().accepted
    before = (_closed(world), world.revision(schema.listener_day_key("listener-1", DAY)))
    late = world.record_receipt(world.receipt_body(late_grant, served_at_ms=world.state(
        schema.grant_key(late_grant))["consumed"]["at_ms"]))
    assert late.result["data"]["disposition"] == "late"
    assert late.result["data"]["hold_reasons"] == ["late"]
    assert world.decide(late.result["data"]["receipt_id"], "release", "operator_explained").accepted
    assert (_closed(world), world.revision(schema.listener_day_key("listener-1", DAY))) == before
    hold = world.state(schema.hold_key(late.result["data"]["receipt_id"]))
    assert hold["status"] == "released"


def test_decisions_append_revisions_with_predecessor_links(world):
    session_id = world.session()
    for index in range(3):
        world.served(session_id, index)
    receipt_id = world.served(session_id, 1)["receipt_id"]
    receipt_before = world.state(schema.receipt_key(receipt_id))
    assert world.decide(receipt_id, "reject", "policy_violation").accepted
    first, second = (world.state(schema.decision_key(receipt_id, revision)) for revision in (1, 2))
    assert (first["disposition"], first["predecessor"]) == ("held", None)
    assert (second["disposition"], second["predecessor"], second["decision"], second["actor_id"]) == (
        "rejected", schema.decision_key(receipt_id, 1), "reject", OPS)
    assert world.state(schema.receipt_key(receipt_id)) == receipt_before
    assert world.revision(schema.receipt_key(receipt_id)) == 1


def test_a_hold_is_decided_once_by_ops_naming_its_revision(world):
    session_id = world.session()
    for index in range(3):
        world.served(session_id, index)
    hold_id = world.served(session_id, 0)["receipt_id"]
    payload = {"hold_id": hold_id, "decision": "release", "reason": "evidence_verified"}
    world.rejected("STALE_REVISION", "DecideHold", payload, actor=OPS)
    world.rejected("CAPABILITY_MISSING", "DecideHold", payload, actor=INGEST,
                   expected=world.stated(schema.hold_key(hold_id)))
    assert world.decide(hold_id).accepted
    world.rejected("INVALID_STATE", "DecideHold", payload, actor=OPS, expected=world.stated(schema.hold_key(hold_id)))
    world.rejected("NOT_FOUND", "DecideHold", {**payload, "hold_id": "hold-x"}, actor=OPS,
                   expected=[{"cf": "state", "key": schema.hold_key("hold-x"), "revision": None}])


def test_the_day_of_a_session_is_the_utc_day_it_opened(world):
    world.now = (DAY + 1) * DAY_MS - 10_000
    assert world.health("node-1").accepted
    session_id = world.session()
    world.served(session_id, 0)
    world.served(session_id, 1)
    world.served(session_id, 2)
    assert world.close_session(session_id).accepted
    assert world.now > (DAY + 1) * DAY_MS
    world.next_day()
    assert world.close_day().accepted
    assert _closed(world)["works"][0]["listened_ms"] == 30_000
    assert world.state(schema.listener_activity_key("listener-1", DAY + 1)) is None


@pytest.mark.parametrize(("decision", "reason"), [("reject", "clock_skew_explained"), ("reject", "evidence_verified"),
                                                  ("release", "fraud_suspected"), ("release", "policy_violation")])
def test_a_hold_decision_needs_a_reason_that_fits_it(world, decision, reason):
    session_id = world.session()
    for index in range(3):
        world.served(session_id, index)
    hold_id = world.served(session_id, 0)["receipt_id"]
    world.rejected("HOLD_REASON_MISMATCH", "DecideHold", {"hold_id": hold_id, "decision": decision, "reason": reason},
                   actor=OPS, expected=world.stated(schema.hold_key(hold_id)))
    assert world.state(schema.hold_key(hold_id))["status"] == "open"


def test_every_decision_reason_fits_exactly_one_decision():
    from typing import get_args

    from ledger_engine.domain.commands.streaming.holds import REASONS_BY_DECISION, DecisionReason
    rows = [reason for reasons in REASONS_BY_DECISION.values() for reason in reasons]
    assert sorted(rows) == sorted(get_args(DecisionReason))
