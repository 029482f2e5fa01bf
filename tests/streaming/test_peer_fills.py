"""Peer fills: signed by the receiving node, one result per consumed fill grant, never royalty duration."""

from __future__ import annotations

import pytest

from ledger_engine.adapters.signatures import PEER_RESULT, sign
from ledger_engine.canonical import sha256_hex
from ledger_engine.domain.schema import streaming as schema
from tests.streaming.conftest import INGEST, node_key_for


@pytest.fixture
def fill(world):
    """node-1 fills pending node-2; returns the consumed fill grant's ID."""
    world.admit("node-2")
    assert world.health("node-2").accepted
    grant_id = world.grant(node_id="node-1", destination_node_id="node-2", chunk_index=1)
    assert world.consume(grant_id).accepted
    return grant_id


def _result(world, grant_id, **overrides):
    return {"result_id": f"fill-{grant_id}", "grant_id": grant_id, "source_node_id": "node-1",
            "destination_node_id": "node-2", "key_version": 1, "rendition_id": "work-1-aac", "chunk_index": 1,
            "outcome": "verified", "bytes_received": 160_000, "observed_at_ms": world.now, **overrides}


def _signed(body):
    signed = sign(node_key_for(body["destination_node_id"], body["key_version"]), PEER_RESULT, body)
    evidence = sha256_hex(signed.evidence_bytes())
    return {"result": body, "evidence_digest": evidence}, evidence


def _record(world, body):
    payload, evidence = _signed(body)
    return world.submit("RecordPeerResult", payload, actor=INGEST, evidence=[evidence])


def _rejected(world, code, body):
    payload, evidence = _signed(body)
    world.rejected(code, "RecordPeerResult", payload, actor=INGEST, evidence=[evidence])


def test_a_verified_fill_is_recorded_against_its_grant(world, fill):
    outcome = _record(world, _result(world, fill))
    assert outcome.result["data"] == {"result_id": f"fill-{fill}", "outcome": "verified"}
    assert world.state(schema.grant_key(fill))["receipt_id"] == f"fill-{fill}"
    assert world.state(schema.peer_fill_key(f"fill-{fill}"))["outcome"] == "verified"


def test_a_fill_result_is_final(world, fill):
    body = _result(world, fill)
    assert _record(world, body).accepted
    _rejected(world, "DUPLICATE_EVIDENCE", body)
    _rejected(world, "CONFLICTING_EVIDENCE", {**body, "outcome": "hash_mismatch"})
    _rejected(world, "CONFLICTING_EVIDENCE", {**body, "result_id": "fill-other"})


def test_a_fill_result_matches_its_peer_fill_grant(world, fill):
    body = _result(world, fill)
    _rejected(world, "INVALID_REFERENCE", {**body, "source_node_id": "node-2", "destination_node_id": "node-1"})
    _rejected(world, "INVALID_REFERENCE", {**body, "chunk_index": 0})
    _rejected(world, "INVALID_REFERENCE", {**body, "outcome": "verified", "bytes_received": 10})
    _rejected(world, "KEY_NOT_VALID", {**body, "observed_at_ms": 0})


def test_a_playback_grant_takes_no_fill_result_and_a_fill_grant_no_receipt(world, fill):
    session_id = world.session()
    playback = world.grant(session_id, chunk_index=1)
    assert world.consume(playback).accepted
    _rejected(world, "INVALID_REFERENCE", _result(world, playback))
    world.receipt_rejected("INVALID_REFERENCE", {**world.receipt_body(playback), "grant_id": fill})


def test_a_fill_result_needs_a_consumed_grant(world):
    world.admit("node-2")
    assert world.health("node-2").accepted
    issued = world.grant(node_id="node-1", destination_node_id="node-2", chunk_index=1)
    _rejected(world, "INVALID_STATE", _result(world, issued))
