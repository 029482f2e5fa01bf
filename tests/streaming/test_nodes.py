"""Nodes: one owner, approved endpoints, pending until activated after readiness, keys that never overlap."""

from __future__ import annotations

import pytest

from ledger_engine.adapters.signatures import public_key_hex
from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.commands.streaming.nodes import approved_endpoint
from ledger_engine.errors import ErrorCode, LedgerError
from tests.streaming.conftest import INGEST, OPS, node_key_for


def test_an_admitted_node_is_pending_with_its_first_key(bare_world):
    bare_world.admit("node-1")
    node = bare_world.state(schema.node_key("node-1"))
    assert (node["operator_id"], node["status"], node["endpoint"]) == (
        "operator-1", "pending", "https://node-1.nodes.example:443")
    assert node["key_versions"] == [{"version": 1, "public_key": public_key_hex(node_key_for("node-1")),
                                     "valid_from_ms": node["admitted_at_ms"], "valid_until_ms": None,
                                     "ended_by": None}]


def test_a_node_has_one_owner_for_life(bare_world):
    bare_world.admit("node-1")
    payload, evidence = bare_world.admission("node-1", "operator-2", endpoint="https://other.nodes.example",
                                             public_key="11" * 32)
    bare_world.rejected("ALREADY_EXISTS", "AdmitNode", payload, actor=INGEST, evidence=[evidence])
    assert bare_world.state(schema.node_key("node-1"))["operator_id"] == "operator-1"


def test_the_owner_must_be_an_active_operator_account(bare_world):
    for operator_id, code in (("listener-1", "INVALID_REFERENCE"), ("artist-1", "INVALID_REFERENCE"),
                              ("nobody", "NOT_FOUND")):
        payload, evidence = bare_world.admission("node-1", operator_id)
        bare_world.rejected(code, "AdmitNode", payload, actor=INGEST, evidence=[evidence])


@pytest.mark.parametrize("endpoint", [
    "http://node.nodes.example", "https://localhost", "https://10.0.0.1", "https://node.nodes.example/path",
    "https://user@node.nodes.example", "https://node.nodes.example:99999", "https://NODE.nodes.example",
    "https://node.nodes.example?x=1", "https://-node.nodes.example", "https://node.nodes.example:0",
])
def test_an_endpoint_must_be_approved(bare_world, endpoint):
    assert approved_endpoint(endpoint) is None
    payload, evidence = bare_world.admission("node-1", endpoint=endpoint)
    bare_world.rejected("INVALID_REFERENCE", "AdmitNode", payload, actor=INGEST, evidence=[evidence])


def test_an_endpoint_serves_one_node_until_that_node_retires(bare_world):
    bare_world.admit("node-1", endpoint="https://edge.nodes.example")
    payload, evidence = bare_world.admission("node-2", endpoint="https://edge.nodes.example:443")
    bare_world.rejected("ALREADY_EXISTS", "AdmitNode", payload, actor=INGEST, evidence=[evidence])
    assert bare_world.set_status("node-1", "retired", "decommissioned").accepted
    assert bare_world.submit("AdmitNode", payload, actor=INGEST, evidence=[evidence]).accepted


def test_a_public_key_belongs_to_one_node(bare_world):
    bare_world.admit("node-1")
    payload, evidence = bare_world.admission("node-2", public_key=public_key_hex(node_key_for("node-1")))
    bare_world.rejected("ALREADY_EXISTS", "AdmitNode", payload, actor=INGEST, evidence=[evidence])


def test_affiliated_accounts_must_exist(bare_world):
    payload, evidence = bare_world.admission("node-1", affiliated=["listener-1", "nobody"])
    bare_world.rejected("NOT_FOUND", "AdmitNode", payload, actor=INGEST, evidence=[evidence])


def test_activation_needs_every_readiness_check_and_fresh_healthy_health(bare_world):
    bare_world.admit("node-1")
    assert bare_world.set_status("node-1", "active").code == "NODE_NOT_ACTIVE"  # no health yet
    assert bare_world.health("node-1", status="degraded").accepted
    assert bare_world.set_status("node-1", "active").code == "NODE_NOT_ACTIVE"
    assert bare_world.health("node-1").accepted
    for check in ("endpoint_verified", "inventory_verified", "independence_reviewed"):
        readiness, evidence = bare_world.readiness("node-1", **{check: False})
        bare_world.rejected("INVALID_STATE", "ChangeNodeStatus",
                            {"node_id": "node-1", "status": "active", "reason": "readiness_passed",
                             "readiness": readiness},
                            actor=OPS, expected=bare_world.stated(schema.node_key("node-1")), evidence=[evidence])
    bare_world.rejected("INVALID_STATE", "ChangeNodeStatus",
                        {"node_id": "node-1", "status": "active", "reason": "readiness_passed"},
                        actor=OPS, expected=bare_world.stated(schema.node_key("node-1")))
    bare_world.now += 11 * 60_000
    assert bare_world.set_status("node-1", "active").code == "EXPIRED"
    assert bare_world.health("node-1").accepted
    assert bare_world.set_status("node-1", "active").accepted
    assert bare_world.state(schema.node_key("node-1"))["status"] == "active"


def test_status_changes_follow_the_lifecycle_and_name_the_revision(world):
    node_key = schema.node_key("node-1")
    assert world.submit("ChangeNodeStatus", {"node_id": "node-1", "status": "suspended", "reason": "health_failure"},
                        actor=OPS).code == "STALE_REVISION"
    assert world.set_status("node-1", "active").code == "INVALID_STATE"  # already active
    suspended = world.set_status("node-1", "suspended", "health_failure")
    assert suspended.accepted
    effects = world.owner.scan("outbox", "node-invalidation.")
    assert [e["data"]["payload"] for _, e in effects] == [{"node_id": "node-1", "status": "suspended",
                                                           "key_versions": []}]
    assert world.health("node-1").accepted
    assert world.set_status("node-1", "active").accepted
    assert world.set_status("node-1", "retired", "decommissioned").accepted
    for status in ("active", "suspended", "retired"):
        assert world.set_status("node-1", status).code == "INVALID_STATE"
    assert world.health("node-1").code == "NODE_NOT_ACTIVE"
    assert world.state(node_key)["status"] == "retired"


def test_only_ops_change_node_status(world):
    outcome = world.submit("ChangeNodeStatus", {"node_id": "node-1", "status": "suspended",
                                                "reason": "health_failure"},
                           actor=INGEST, expected=world.stated(schema.node_key("node-1")))
    assert outcome.code == "CAPABILITY_MISSING"


def _rotation(world, *, version=2, valid_from_ms=None, reason="scheduled", compromised_since_ms=None,
              public_key=None):
    payload = {"node_id": "node-1", "version": version,
               "public_key": public_key or public_key_hex(node_key_for("node-1", version)),
               "valid_from_ms": world.now + 60_000 if valid_from_ms is None else valid_from_ms,
               "reason": reason, "evidence_digest": "cd" * 32}
    if compromised_since_ms is not None:
        payload["compromised_since_ms"] = compromised_since_ms
    return payload


def _rotate(world, payload):
    return world.submit("RotateNodeKey", payload, actor=INGEST, expected=world.stated(schema.node_key("node-1")),
                        evidence=["cd" * 32])


def test_a_scheduled_rotation_ends_the_previous_key_when_the_next_begins(world):
    payload = _rotation(world)
    assert _rotate(world, payload).accepted
    first, second = world.state(schema.node_key("node-1"))["key_versions"]
    assert first["valid_until_ms"] == second["valid_from_ms"] == payload["valid_from_ms"]
    assert (first["ended_by"], second["valid_until_ms"]) == ("scheduled", None)


def test_a_compromise_cuts_the_previous_key_short(world):
    since = world.now
    assert _rotate(world, _rotation(world, reason="compromised", compromised_since_ms=since)).accepted
    first, second = world.state(schema.node_key("node-1"))["key_versions"]
    assert first["valid_until_ms"] == since < second["valid_from_ms"]


def test_key_versions_never_overlap_or_start_in_the_past(world):
    now = world.now
    for payload, code in (
        (_rotation(world, valid_from_ms=now - 1), "INVALID_TIME"),
        (_rotation(world, version=3), "INVALID_STATE"),
        (_rotation(world, version=1 + 1, public_key=public_key_hex(node_key_for("node-1"))), "ALREADY_EXISTS"),
        (_rotation(world, reason="compromised", compromised_since_ms=now + 10_000_000), "INVALID_TIME"),
        (_rotation(world, reason="compromised", compromised_since_ms=0), "INVALID_TIME"),
    ):
        world.rejected(code, "RotateNodeKey", payload, actor=INGEST, expected=world.stated(schema.node_key("node-1")),
                       evidence=["cd" * 32])
    later = _rotation(world, valid_from_ms=world.now + 600_000)
    assert _rotate(world, later).accepted
    earlier_than_scheduled = _rotation(world, version=3, valid_from_ms=world.now + 1_000)
    assert _rotate(world, earlier_than_scheduled).code == "INVALID_TIME"
    versions = world.state(schema.node_key("node-1"))["key_versions"]
    for before, after in zip(versions, versions[1:]):
        assert before["valid_until_ms"] <= after["valid_from_ms"]


def test_rotation_names_the_node_revision_and_invalidates_the_old_key(world):
    world.rejected("STALE_REVISION", "RotateNodeKey", _rotation(world), actor=INGEST, evidence=["cd" * 32])
    assert _rotate(world, _rotation(world)).accepted
    payloads = [e["data"]["payload"] for _, e in world.owner.scan("outbox", "node-invalidation.")]
    assert payloads == [{"node_id": "node-1", "status": "active", "key_versions": [1]}]


def test_health_observations_move_forward_and_not_into_the_future(world):
    observed = world.state(schema.node_health_key("node-1"))["observed_at_ms"]
    assert world.health("node-1", observed_at_ms=observed).code == "INVALID_TIME"
    assert world.health("node-1", observed_at_ms=world.now + 60_000).code == "INVALID_TIME"
    assert world.health("node-9").code == "NOT_FOUND"
    assert world.health("node-1", status="unreachable").accepted
    assert world.state(schema.node_health_key("node-1"))["status"] == "unreachable"


def test_a_pending_node_may_report_health_for_cache_bootstrap(bare_world):
    bare_world.admit("node-1")
    assert bare_world.health("node-1").accepted


@pytest.mark.parametrize("public_key", ["ab" * 33, "AB" * 32, "ab" * 31])
def test_a_public_key_is_32_bytes_of_lowercase_hex(bare_world, public_key):
    payload, evidence = bare_world.admission("node-1", public_key=public_key)
    with pytest.raises(LedgerError) as raised:
        bare_world.submit("AdmitNode", payload, actor=INGEST, evidence=[evidence])
    assert raised.value.code == ErrorCode.INVALID_PAYLOAD
