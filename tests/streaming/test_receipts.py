"""Receipts: bound to a consumed grant, one final receipt per grant, conflicting bodies rejected, holds raised."""

from __future__ import annotations

import pytest

from ledger_engine.adapters.signatures import public_key_hex
from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.commands.streaming.holds import HoldReason
from tests.streaming.conftest import COORDINATOR, INGEST, OPS, node_key_for


@pytest.fixture
def consumed(world):
    """An open session and a consumed grant for its first chunk: (session_id, grant_id)."""
    session_id = world.session()
    grant_id = world.grant(session_id)
    assert world.consume(grant_id).accepted
    return session_id, grant_id


def test_a_counted_receipt_is_recorded_once_with_its_first_decision(world, consumed):
    session_id, grant_id = consumed
    outcome = world.record_receipt(world.receipt_body(grant_id))
    assert outcome.result["data"] == {"receipt_id": f"rcpt-{grant_id}", "disposition": "accepted",
                                      "hold_reasons": []}
    receipt = world.state(schema.receipt_key(f"rcpt-{grant_id}"))
    assert (receipt["media_ms"], receipt["partial"], receipt["hold_id"]) == (10_000, False, None)
    assert world.state(schema.grant_key(grant_id))["receipt_id"] == f"rcpt-{grant_id}"
    session = world.state(schema.session_key(session_id))
    assert (session["receipt_ids"], session["receipted_media_ms"]) == ([f"rcpt-{grant_id}"], 10_000)
    decision = world.state(schema.decision_key(f"rcpt-{grant_id}", 1))
    assert (decision["disposition"], decision["predecessor"], decision["revision"]) == ("accepted", None, 1)


def test_the_same_receipt_again_is_a_duplicate_and_another_body_a_conflict(world, consumed):
    _, grant_id = consumed
    body = world.receipt_body(grant_id)
    assert world.record_receipt(body).accepted
    world.receipt_rejected("DUPLICATE_EVIDENCE", body)
    world.receipt_rejected("CONFLICTING_EVIDENCE", {**body, "bytes_served": 1})
    world.receipt_rejected("CONFLICTING_EVIDENCE", {**body, "receipt_id": "rcpt-other"})
    assert world.state(schema.receipt_key("rcpt-other")) is None


def test_a_receipt_needs_a_consumed_grant_that_it_matches(world):
    session_id = world.session()
    issued = world.grant(session_id)
    world.receipt_rejected("INVALID_STATE", world.receipt_body(issued))
    assert world.consume(issued).accepted
    body = world.receipt_body(issued)
    for field, value in (("session_id", "session-x"), ("chunk_index", 1), ("node_id", "node-9"),
                         ("rendition_id", "other-aac")):
        world.receipt_rejected("INVALID_REFERENCE", {**body, field: value})
    world.receipt_rejected("NOT_FOUND", {**body, "grant_id": "grant-x"})


def test_a_receipt_names_a_key_version_of_the_node_and_a_past_time(world, consumed):
    _, grant_id = consumed
    world.receipt_rejected("KEY_NOT_VALID", world.receipt_body(grant_id, key_version=2), signer_version=1)
    world.receipt_rejected("INVALID_TIME", world.receipt_body(grant_id, served_at_ms=world.now + 60_000))


def test_a_receipt_never_claims_more_bytes_than_the_chunk(world, consumed):
    _, grant_id = consumed
    world.receipt_rejected("INVALID_REFERENCE", world.receipt_body(grant_id, bytes_served=160_001))


def test_a_partial_receipt_counts_bytes_but_no_listening(world, consumed):
    session_id, grant_id = consumed
    outcome = world.record_receipt(world.receipt_body(grant_id, bytes_served=80_000))
    assert outcome.result["data"]["disposition"] == "partial"
    assert world.state(schema.session_key(session_id))["receipted_media_ms"] == 0


def test_evidence_must_be_listed_in_the_envelope(world, consumed):
    _, grant_id = consumed
    payload, _ = world.receipt_payload(world.receipt_body(grant_id))
    world.rejected("INVALID_REFERENCE", "RecordReceipt", payload, actor=INGEST, evidence=[])


def _held(world, body, **options):
    outcome = world.record_receipt(body, **options)
    assert outcome.accepted, outcome.result
    return outcome.result["data"]


def test_a_receipt_from_a_key_cut_short_by_compromise_is_held(world, consumed):
    _, grant_id = consumed
    served_at = world.now
    rotation = {"node_id": "node-1", "version": 2, "public_key": public_key_hex(node_key_for("node-1", 2)),
                "valid_from_ms": world.now + 5_000, "reason": "compromised",
                "compromised_since_ms": served_at - 1, "evidence_digest": "cd" * 32}
    assert world.submit("RotateNodeKey", rotation, actor=OPS, expected=world.stated(schema.node_key("node-1")),
                        evidence=["cd" * 32]).accepted
    data = _held(world, world.receipt_body(grant_id, served_at_ms=served_at))
    assert (data["disposition"], data["hold_reasons"]) == ("held", [HoldReason.KEY_ROTATED_OUT])
    hold = world.state(schema.hold_key(f"rcpt-{grant_id}"))
    assert (hold["status"], hold["reasons"], hold["listener_id"]) == ("open", ["key_rotated_out"], "listener-1")


def test_listening_beyond_the_rendition_is_held(world):
    session_id = world.session()
    for index in range(3):
        assert world.served(session_id, index)["disposition"] == "accepted"
    replay = world.served(session_id, 0)
    assert replay["hold_reasons"] == ["duration_beyond_rendition"]


def test_a_node_serving_its_operators_affiliate_is_held(world):
    world.active_node("node-2", "operator-2", affiliated=["listener-1"])
    session_id = world.session()
    assert world.served(session_id, 0, node_id="node-2")["hold_reasons"] == ["self_serving_node"]


def test_a_receipt_served_outside_its_grant_window_is_held(world, consumed):
    _, grant_id = consumed
    issued = world.state(schema.grant_key(grant_id))["issued_at_ms"]
    data = _held(world, world.receipt_body(grant_id, served_at_ms=issued - 1))
    assert data["hold_reasons"] == ["served_outside_grant"]


def test_a_receipt_served_inside_another_session_is_held(world):
    first = world.session()
    prefetched = world.grant(first, chunk_index=1)
    assert world.served(first, 0)["disposition"] == "accepted"
    assert world.close_session(first).accepted
    world.session()
    assert world.consume(prefetched).accepted
    data = _held(world, world.receipt_body(prefetched))
    assert data["hold_reasons"] == ["overlapping_sessions"]


def test_a_receipt_can_trip_several_reasons(world):
    world.active_node("node-2", "operator-2", affiliated=["listener-1"])
    session_id = world.session()
    grant_id = world.grant(session_id, node_id="node-2")
    assert world.consume(grant_id).accepted
    issued = world.state(schema.grant_key(grant_id))["issued_at_ms"]
    data = _held(world, world.receipt_body(grant_id, served_at_ms=issued - 1))
    assert data["hold_reasons"] == ["self_serving_node", "served_outside_grant"]


def test_only_ingest_records_receipts(world, consumed):
    _, grant_id = consumed
    payload, evidence = world.receipt_payload(world.receipt_body(grant_id))
    world.rejected("CAPABILITY_MISSING", "RecordReceipt", payload, actor=COORDINATOR, evidence=[evidence])
