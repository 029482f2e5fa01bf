"""The review projections: hold queue, session evidence, node history, listener-day durations; rebuildable."""

from __future__ import annotations

from ledger_engine.adapters.signatures import public_key_hex
from ledger_engine.domain.schema import streaming as schema
from ledger_engine.selectors import streaming_queries as queries
from ledger_engine.projections.rebuild import indexes_digest, rebuild_indexes
from tests.streaming.conftest import DAY, OPS, node_key_for


def _held_session(world):
    """A session with three counted receipts on node-1 and two held ones on self-serving node-2."""
    world.active_node("node-2", "operator-2", affiliated=["listener-1"])
    session_id = world.session()
    counted = [world.served(session_id, index)["receipt_id"] for index in range(3)]
    first_hold = world.served(session_id, 0, node_id="node-2")["receipt_id"]
    world.now += 5_000
    second_hold = world.served(session_id, 1, node_id="node-2")["receipt_id"]
    return session_id, counted, [first_hold, second_hold]


def test_open_holds_queue_by_age_and_reason_with_counts(world):
    _, _, holds = _held_session(world)
    page = queries.open_holds(world.owner.view())
    assert [item["hold_id"] for item in page.items] == holds and page.next_start is None
    assert page.items[0]["reasons"] == ["duration_beyond_rendition", "self_serving_node"]
    by_reason = queries.open_holds(world.owner.view(), reason="self_serving_node", limit=1)
    assert [item["hold_id"] for item in by_reason.items] == holds[:1]
    rest = queries.open_holds(world.owner.view(), reason="self_serving_node", start=by_reason.next_start, limit=1)
    assert [item["hold_id"] for item in rest.items] == holds[1:] and rest.next_start is None
    assert queries.open_hold_counts(world.owner.view()) == {"duration_beyond_rendition": 2, "self_serving_node": 2}
    assert world.decide(holds[0], "reject", "fraud_suspected").accepted
    assert [item["hold_id"] for item in queries.open_holds(world.owner.view()).items] == holds[1:]
    assert queries.open_hold_counts(world.owner.view()) == {"duration_beyond_rendition": 1, "self_serving_node": 1}


def test_a_sessions_full_evidence(world):
    session_id, counted, holds = _held_session(world)
    assert world.decide(holds[0], "release").accepted
    evidence = queries.session_evidence(world.owner.view(), session_id)
    assert evidence["session"]["session_id"] == session_id
    assert len(evidence["grants"]) == 5 and all(g["state"] == "consumed" for g in evidence["grants"])
    assert sorted(r["id"] for r in evidence["receipts"]) == sorted(counted + holds)
    assert sorted((d["id"], d["revision"], d["disposition"]) for d in evidence["decisions"]) == sorted(
        [(r, 1, "accepted") for r in counted] + [(h, 1, "held") for h in holds] + [(holds[0], 2, "accepted")])
    assert sorted((h["id"], h["status"]) for h in evidence["holds"]) == sorted(
        [(holds[0], "released"), (holds[1], "open")])
    assert sorted(evidence["nodes"]) == ["node-1", "node-2"]
    assert queries.current_decision(world.owner.view(), holds[0])["revision"] == 2
    assert queries.current_decision(world.owner.view(), holds[1])["disposition"] == "held"
    assert queries.session_evidence(world.owner.view(), "session-x") is None


def test_a_nodes_health_and_key_history(world):
    rotation = {"node_id": "node-1", "version": 2, "public_key": public_key_hex(node_key_for("node-1", 2)),
                "valid_from_ms": world.now + 60_000, "reason": "scheduled", "evidence_digest": "cd" * 32}
    assert world.submit("RotateNodeKey", rotation, actor=OPS, expected=world.stated(schema.node_key("node-1")),
                        evidence=["cd" * 32]).accepted
    assert world.health("node-1", status="degraded").accepted
    history = queries.node_history(world.owner.view(), "node-1")
    assert [event["type"] for event in history["history"].items] == [
        "NodeAdmitted", "NodeHealthRecorded", "NodeStatusChanged", "NodeKeyRotated", "NodeHealthRecorded"]
    assert [entry["version"] for entry in history["node"]["key_versions"]] == [1, 2]
    assert history["health"]["status"] == "degraded"
    first_two = queries.node_history(world.owner.view(), "node-1", limit=2)["history"]
    assert len(first_two.items) == 2 and first_two.next_start is not None


def test_a_listener_days_eligible_duration_per_work(world):
    world.listen(chunks=3)
    world.listen(chunks=2)
    world.next_day()
    assert world.close_day().accepted
    assert queries.eligible_duration_per_work(world.owner.view(), "listener-1", DAY) == [
        {"work_id": "work-1", "rights_version": 1, "listened_ms": 30_000}]
    assert queries.listener_day(world.owner.view(), "listener-1", DAY)["status"] == "closed"
    assert queries.listener_day(world.owner.view(), "listener-1", DAY + 1) is None


def test_rebuilt_indexes_are_byte_identical(world):
    held_session, _, _ = _held_session(world)
    assert world.close_session(held_session).accepted
    assert world.open_period("period-2", "listener-2").accepted
    session_id = world.session("listener-2", period_id="period-2")
    world.now += 700_000
    assert world.close_session(session_id, "expired").accepted
    assert world.decide(queries.open_holds(world.owner.view()).items[0]["hold_id"], "release").accepted
    live = world.owner.at_boundary(indexes_digest)
    assert world.owner.at_boundary(rebuild_indexes) == live
