"""Grants: unique nonces consumed once, a monotonic coordinator sequence, nodes revalidated at issue."""

from __future__ import annotations

from ledger_engine.adapters.grants import nonce_hash
from ledger_engine.domain.commands.catalogue import work_key
from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.commands.streaming.policy import HEALTH_FRESH_MS, MAX_GRANT_TTL_MS
from tests.streaming.conftest import COORDINATOR, INGEST


def test_a_grant_renews_the_session_lease_and_records_its_coordinator(world):
    session_id = world.session(lease_ms=60_000)
    world.now += 30_000
    grant_id = world.grant(session_id)
    grant = world.state(schema.grant_key(grant_id))
    assert (grant["state"], grant["coordinator_id"], grant["coordinator_sequence"]) == ("issued", COORDINATOR, 1)
    session = world.state(schema.session_key(session_id))
    assert session["expires_at_ms"] == grant["issued_at_ms"] + 60_000
    assert session["grant_count"] == 1


def test_a_nonce_is_issued_once(world):
    session_id = world.session()
    payload = world.grant_payload(session_id=session_id, nonce="shared")
    assert world.submit("IssueGrant", payload, actor=COORDINATOR).accepted
    again = world.grant_payload(session_id=session_id, nonce="shared", chunk_index=1)
    world.rejected("NONCE_REUSED", "IssueGrant", again, actor=COORDINATOR)


def test_the_coordinator_sequence_strictly_increases(world):
    session_id = world.session()
    world.grant(session_id)
    latest = world.grant_payload(session_id=session_id)
    assert world.submit("IssueGrant", latest, actor=COORDINATOR).accepted
    for sequence in (latest["coordinator_sequence"], latest["coordinator_sequence"] - 1):
        stale = {**world.grant_payload(session_id=session_id), "coordinator_sequence": sequence}
        world.rejected("INVALID_STATE", "IssueGrant", stale, actor=COORDINATOR)
    assert world.grant(session_id)


def test_grant_expiry_is_bounded(world):
    session_id = world.session()
    world.rejected("INVALID_TIME", "IssueGrant", world.grant_payload(session_id=session_id, ttl_ms=-2_000),
                   actor=COORDINATOR)
    world.rejected("INVALID_TIME", "IssueGrant",
                   world.grant_payload(session_id=session_id, ttl_ms=MAX_GRANT_TTL_MS + 1_000), actor=COORDINATOR)


def test_a_grant_needs_an_open_unexpired_session_on_an_active_work(world):
    session_id = world.session(lease_ms=5_000)
    world.now += 6_000
    world.rejected("EXPIRED", "IssueGrant", world.grant_payload(session_id=session_id), actor=COORDINATOR)
    assert world.close_session(session_id, "expired").accepted
    world.rejected("INVALID_STATE", "IssueGrant", world.grant_payload(session_id=session_id), actor=COORDINATOR)
    live = world.session()
    world.rejected("INVALID_REFERENCE", "IssueGrant", world.grant_payload(session_id=live, chunk_index=3),
                   actor=COORDINATOR)
    world.work("work-2")
    assert world.health("node-1", inventory=["work-1-aac", "work-2-aac"]).accepted
    world.rejected("INVALID_REFERENCE", "IssueGrant",
                   world.grant_payload(session_id=live, rendition_id="work-2-aac"), actor=COORDINATOR)
    assert world.submit("DisableWork", {"work_id": "work-1", "reason": "takedown_notice", "evidence_digest": "aa" * 32},
                        actor=INGEST, expected=world.stated(work_key("work-1")), evidence=["aa" * 32]).accepted
    world.rejected("INVALID_STATE", "IssueGrant", world.grant_payload(session_id=live), actor=COORDINATOR)


def test_issue_revalidates_the_node_against_its_latest_health(world):
    session_id = world.session(lease_ms=1_800_000)
    world.now += HEALTH_FRESH_MS + 1_000
    world.rejected("EXPIRED", "IssueGrant", world.grant_payload(session_id=session_id), actor=COORDINATOR)
    assert world.health("node-1", status="degraded").accepted
    world.rejected("NODE_NOT_ACTIVE", "IssueGrant", world.grant_payload(session_id=session_id), actor=COORDINATOR)
    assert world.health("node-1", inventory=["other-aac"]).accepted
    world.rejected("INVALID_REFERENCE", "IssueGrant", world.grant_payload(session_id=session_id), actor=COORDINATOR)
    assert world.health("node-1").accepted
    assert world.set_status("node-1", "suspended", "health_failure").accepted
    world.rejected("NODE_NOT_ACTIVE", "IssueGrant", world.grant_payload(session_id=session_id), actor=COORDINATOR)
    assert world.health("node-1").accepted
    assert world.set_status("node-1", "active").accepted
    assert world.grant(session_id)


def test_a_pending_node_never_serves_listeners_but_may_receive_fills(world):
    world.admit("node-2")
    assert world.health("node-2").accepted
    session_id = world.session()
    world.rejected("NODE_NOT_ACTIVE", "IssueGrant", world.grant_payload(session_id=session_id, node_id="node-2"),
                   actor=COORDINATOR)
    fill = world.grant(node_id="node-1", destination_node_id="node-2")
    assert world.state(schema.grant_key(fill))["purpose"] == "peer_fill"
    world.rejected("INVALID_REFERENCE", "IssueGrant",
                   world.grant_payload(node_id="node-1", destination_node_id="node-1"), actor=COORDINATOR)


def test_a_grant_is_consumed_once_with_its_own_nonce_before_it_expires(world):
    session_id = world.session()
    grant_id = world.grant(session_id)
    world.rejected("INVALID_REFERENCE", "ConsumeGrant",
                   {"grant_id": grant_id, "request_id": "r-1", "nonce_hash": nonce_hash(b"wrong")}, actor=COORDINATOR)
    assert world.consume(grant_id).accepted
    grant = world.state(schema.grant_key(grant_id))
    assert grant["state"] == "consumed" and grant["consumed"]["request_id"] == f"req-{grant_id}"
    world.rejected("ALREADY_CONSUMED", "ConsumeGrant",
                   {"grant_id": grant_id, "request_id": "r-2", "nonce_hash": nonce_hash(grant_id.encode())},
                   actor=COORDINATOR)
    late = world.grant(session_id)
    world.now += 61_000
    assert world.consume(late).code == "EXPIRED"


def test_a_grant_is_not_consumed_on_a_node_suspended_since_issue(world):
    grant_id = world.grant(world.session())
    assert world.set_status("node-1", "suspended", "policy_violation").accepted
    assert world.consume(grant_id).code == "NODE_NOT_ACTIVE"


def test_a_grant_of_a_closed_session_may_still_be_consumed_before_expiry(world):
    session_id = world.session()
    prefetched = world.grant(session_id, chunk_index=1)
    assert world.close_session(session_id).accepted
    assert world.consume(prefetched).accepted
