"""The admission adapter: verified signatures, evidence stored first, envelopes reused on retry."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import orjson
import pytest

from ledger_engine.adapters.billing import BillingAdapter, ProviderEvent
from ledger_engine.adapters.files import create_durably
from ledger_engine.adapters.gateway import CommandGateway, derived_command_id
from ledger_engine.adapters.grants import GrantAdapter
from ledger_engine.adapters.node_evidence import NodeEvidenceAdapter
from ledger_engine.adapters.nodes import NodeAdapter
from ledger_engine.adapters.signatures import (
    BILLING_EVENT, KEY_ROTATION, NODE_ADMISSION, PEER_RESULT, RECEIPT, SignedDocument, key_from_seed,
    public_key_hex, sign,
)
from ledger_engine.application.envelopes import build_envelope
from ledger_engine.canonical import canonical_bytes
from ledger_engine.domain.schema import streaming as schema
from ledger_engine.domain.schema.staff import account_key
from ledger_engine.domain.commands.streaming.nodes import HealthObservation
from ledger_engine.domain.commands.streaming.policy import DAY_MS
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import STATE
from tests.streaming.conftest import ADMIN, COORDINATOR, DAY, INGEST, node_key_for

PROVIDER_KEY = key_from_seed("test-provider:test-pay")


@pytest.fixture
def gateway(world, tmp_path):
    def clock() -> int:
        world.now += 1_000
        return world.now

    return CommandGateway(world.owner, tmp_path / "admission", clock=clock)


def _refused(code, call, *args, **kwargs):
    with pytest.raises(LedgerError) as raised:
        call(*args, **kwargs)
    assert raised.value.code == code, raised.value
    return raised.value


# The gateway: build once, store, submit or resolve.

def _registration(account_id):
    return {"account_id": account_id, "kind": "listener", "identity_digest": "12" * 32, "roles": []}


def test_a_retry_submits_the_stored_envelope_and_gets_the_original_outcome(world, gateway):
    first = gateway.execute("RegisterAccount", _registration("listener-9"), actor_id=ADMIN, command_id=_id(1))
    stored = gateway.envelopes.load(_id(1))
    world.now += 60_000
    again = gateway.execute("RegisterAccount", _registration("listener-9"), actor_id=ADMIN, command_id=_id(1))
    assert (again.sequence, again.entry_hash, again.duplicate) == (first.sequence, first.entry_hash, True)
    assert gateway.envelopes.load(_id(1)) == stored
    assert world.owner.journal_entry(first.sequence)["envelope"] == stored


def test_a_lost_response_is_resolved_by_command_id(world, gateway):
    envelope = gateway.envelope("RegisterAccount", _registration("listener-9"), actor_id=ADMIN, command_id=_id(2))
    recorded = world.owner.submit(envelope)  # the caller never saw this answer
    head = world.owner.head()
    outcome = gateway.submit(gateway.envelopes.load(_id(2)))
    assert (outcome.sequence, outcome.result) == (recorded.sequence, recorded.result)
    assert world.owner.head() == head


def test_another_request_under_a_stored_command_id_conflicts(gateway):
    gateway.execute("RegisterAccount", _registration("listener-9"), actor_id=ADMIN, command_id=_id(3))
    _refused(ErrorCode.COMMAND_ID_CONFLICT, gateway.execute, "RegisterAccount", _registration("listener-8"),
             actor_id=ADMIN, command_id=_id(3))


def test_bad_input_is_refused_before_anything_is_stored(world, gateway):
    head = world.owner.head()
    _refused(ErrorCode.UNKNOWN_FIELD, gateway.execute, "RegisterAccount", {**_registration("x"), "email": "a@b"},
             actor_id=ADMIN, command_id=_id(4))
    _refused(ErrorCode.INVALID_REFERENCE, gateway.execute, "ImportFunding", {
        "lot_id": "lot-1", "asset": "USDC", "amount": "1", "deposit": {
            "chain": "simulated", "transaction_hash": "aa" * 32, "event_index": 0, "evidence_digest": "bb" * 32}},
        actor_id=INGEST, command_id=_id(5), evidence=["bb" * 32])
    assert gateway.envelopes.load(_id(4)) is None and gateway.envelopes.load(_id(5)) is None
    assert world.owner.head() == head


def test_admission_time_never_runs_backwards(world, tmp_path):
    times = iter([5_000, 3_000, 9_000])
    gateway = CommandGateway(world.owner, tmp_path / "other", clock=lambda: next(times))
    assert [gateway.now_ms() for _ in range(3)] == [5_000, 5_000, 9_000]


def test_evidence_is_content_addressed_and_checked_when_read(gateway):
    digest = gateway.evidence.put(b"signed bytes")
    assert gateway.evidence.put(b"signed bytes") == digest
    assert gateway.evidence.get(digest) == b"signed bytes"
    gateway.evidence.path_of(digest).write_bytes(b"tampered")
    _refused(ErrorCode.VERIFICATION_FAILED, gateway.evidence.get, digest)


@pytest.mark.parametrize("damage", [b"", b"tampered"])
def test_a_damaged_evidence_file_is_not_stored_and_storing_its_bytes_again_mends_it(gateway, damage):
    digest = gateway.evidence.put(b"signed bytes")
    gateway.evidence.path_of(digest).write_bytes(damage)
    assert digest not in gateway.evidence
    assert gateway.evidence.put(b"signed bytes") == digest
    assert digest in gateway.evidence and gateway.evidence.get(digest) == b"signed bytes"
    assert [path.name for path in gateway.evidence.path_of(digest).parent.iterdir()] == [digest]


def test_a_link_under_an_evidence_name_is_not_the_evidence_and_is_replaced_by_a_file(gateway, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"signed bytes")
    digest = gateway.evidence.put(b"signed bytes")
    path = gateway.evidence.path_of(digest)
    path.unlink()
    path.symlink_to(elsewhere)
    assert digest not in gateway.evidence
    _refused(ErrorCode.VERIFICATION_FAILED, gateway.evidence.get, digest)
    gateway.evidence.put(b"signed bytes")
    assert not path.is_symlink() and gateway.evidence.get(digest) == b"signed bytes"


def test_an_envelope_citing_damaged_evidence_is_refused_until_the_bytes_are_stored_again(world, gateway):
    evidence = b"deposit observation"
    digest = gateway.evidence.put(evidence)
    gateway.evidence.path_of(digest).write_bytes(b"")
    payload = {"lot_id": "lot-1", "asset": "USDC", "amount": "5000000", "deposit": {
        "chain": "simulated", "transaction_hash": "aa" * 32, "event_index": 0, "evidence_digest": digest}}

    def envelope():
        return gateway.envelope("ImportFunding", payload, actor_id=INGEST, command_id=_id(7), evidence=[digest])

    error = _refused(ErrorCode.INVALID_REFERENCE, envelope)
    assert "not stored intact" in error.detail and gateway.envelopes.load(_id(7)) is None
    gateway.evidence.put(evidence)
    assert envelope()["evidence_hashes"] == [digest]


def test_concurrent_requests_for_one_command_id_share_the_first_stored_envelope(gateway):
    with ThreadPoolExecutor(8) as pool:
        envelopes = list(pool.map(lambda _: gateway.envelope("RegisterAccount", _registration("listener-9"),
                                                             actor_id=ADMIN, command_id=_id(6)), range(16)))
    assert all(envelope == envelopes[0] for envelope in envelopes)
    assert gateway.envelopes.load(_id(6)) == envelopes[0]


def test_a_durable_file_is_created_once_and_whole(tmp_path):
    with ThreadPoolExecutor(8) as pool:
        created = list(pool.map(lambda number: create_durably(tmp_path / "evidence", b"bytes %d" % number), range(16)))
    assert created.count(True) == 1
    assert (tmp_path / "evidence").read_bytes() == b"bytes %d" % created.index(True)
    assert [path.name for path in tmp_path.iterdir()] == ["evidence"]


def _id(number):
    return f"00000000-0000-4000-8000-{number:012d}"


# Node evidence.

def _receipt_adapter(gateway):
    return NodeEvidenceAdapter(gateway, actor_id=INGEST)


def _consumed(world):
    session_id = world.session()
    grant_id = world.grant(session_id)
    assert world.consume(grant_id).accepted
    return grant_id


def test_a_signed_receipt_is_verified_stored_and_recorded(world, gateway):
    body = world.receipt_body(_consumed(world))
    signed = sign(node_key_for("node-1"), RECEIPT, body)
    outcome = _receipt_adapter(gateway).record_receipt(signed.body, signed.signature)
    assert outcome.accepted and outcome.result["data"]["disposition"] == "accepted"
    envelope = world.owner.journal_entry(outcome.sequence)["envelope"]
    digest = envelope["payload"]["evidence_digest"]
    assert envelope["evidence_hashes"] == [digest]
    assert envelope["command_id"] == derived_command_id("RecordReceipt", digest)
    stored = orjson.loads(gateway.evidence.get(digest))
    assert (stored["body"].encode(), stored["signature"]) == (signed.body, signed.signature.hex())
    assert signed.signature.hex() not in canonical_bytes(envelope).decode()
    again = _receipt_adapter(gateway).record_receipt(signed.body, signed.signature)
    assert again.duplicate and again.sequence == outcome.sequence


def test_a_receipt_not_signed_by_the_key_in_force_is_refused_before_admission(world, gateway):
    body = world.receipt_body(_consumed(world))
    head = world.owner.head()
    forged = sign(key_from_seed("someone else"), RECEIPT, body)
    _refused(ErrorCode.SIGNATURE_INVALID, _receipt_adapter(gateway).record_receipt, forged.body, forged.signature)
    as_peer_result = sign(node_key_for("node-1"), PEER_RESULT, body)
    _refused(ErrorCode.SIGNATURE_INVALID, _receipt_adapter(gateway).record_receipt, as_peer_result.body,
             as_peer_result.signature)
    tampered = sign(node_key_for("node-1"), RECEIPT, body)
    _refused(ErrorCode.SIGNATURE_INVALID, _receipt_adapter(gateway).record_receipt,
             tampered.body.replace(b"160000", b"150000"), tampered.signature)
    unknown = sign(node_key_for("node-1"), RECEIPT, {**body, "key_version": 2})
    _refused(ErrorCode.KEY_NOT_VALID, _receipt_adapter(gateway).record_receipt, unknown.body, unknown.signature)
    extra = sign(node_key_for("node-1"), RECEIPT, {**body, "listener_email": "x@example.com"})
    _refused(ErrorCode.UNKNOWN_FIELD, _receipt_adapter(gateway).record_receipt, extra.body, extra.signature)
    assert world.owner.head() == head
    assert not gateway.evidence.root.exists() and not gateway.envelopes.root.exists()


def test_the_key_version_in_force_at_the_served_time_verifies(world, gateway):
    grant_id = _consumed(world)
    served_at = world.now
    rotation = {"node_id": "node-1", "version": 2, "public_key": public_key_hex(node_key_for("node-1", 2)),
                "valid_from_ms": world.now + 2_000}
    signed_rotation = sign(node_key_for("node-1", 1), KEY_ROTATION, rotation)
    assert NodeAdapter(gateway, actor_id=INGEST).rotate_key(signed_rotation.body, signed_rotation.signature).accepted
    world.now += 10_000
    old = sign(node_key_for("node-1", 1), RECEIPT, world.receipt_body(grant_id, served_at_ms=served_at))
    assert _receipt_adapter(gateway).record_receipt(old.body, old.signature).accepted
    second = world.grant(world.state(schema.grant_key(grant_id))["session_id"], chunk_index=1)
    assert world.consume(second).accepted
    stale = sign(node_key_for("node-1", 1), RECEIPT, world.receipt_body(second))
    _refused(ErrorCode.KEY_NOT_VALID, _receipt_adapter(gateway).record_receipt, stale.body, stale.signature)
    fresh = sign(node_key_for("node-1", 2), RECEIPT, world.receipt_body(second, key_version=2))
    assert _receipt_adapter(gateway).record_receipt(fresh.body, fresh.signature).accepted


def test_a_conflicting_receipt_body_reaches_the_rule_and_is_rejected(world, gateway):
    body = world.receipt_body(_consumed(world))
    first = sign(node_key_for("node-1"), RECEIPT, body)
    assert _receipt_adapter(gateway).record_receipt(first.body, first.signature).accepted
    other = sign(node_key_for("node-1"), RECEIPT, {**body, "bytes_served": 100_000})
    assert _receipt_adapter(gateway).record_receipt(other.body, other.signature).code == "CONFLICTING_EVIDENCE"


def test_a_peer_result_is_verified_with_the_receiving_nodes_key(world, gateway):
    world.admit("node-2")
    assert world.health("node-2").accepted
    grant_id = world.grant(node_id="node-1", destination_node_id="node-2")
    assert world.consume(grant_id).accepted
    body = {"result_id": "fill-1", "grant_id": grant_id, "source_node_id": "node-1", "destination_node_id": "node-2",
            "key_version": 1, "rendition_id": "work-1-aac", "chunk_index": 0, "outcome": "verified",
            "bytes_received": 160_000, "observed_at_ms": world.now}
    by_source = sign(node_key_for("node-1"), PEER_RESULT, body)
    _refused(ErrorCode.SIGNATURE_INVALID, _receipt_adapter(gateway).record_peer_result, by_source.body,
             by_source.signature)
    signed = sign(node_key_for("node-2"), PEER_RESULT, body)
    assert _receipt_adapter(gateway).record_peer_result(signed.body, signed.signature).accepted


# Node applications, rotations and health.

def test_a_node_application_proves_possession_of_its_key(world, gateway):
    application = {"node_id": "node-3", "operator_id": "operator-2", "endpoint": "https://node-3.nodes.example",
                   "region": "eu-west", "public_key": public_key_hex(node_key_for("node-3")),
                   "independence": {"declaration_digest": "ab" * 32, "affiliated_account_ids": []}}
    nodes = NodeAdapter(gateway, actor_id=INGEST)
    forged = sign(node_key_for("node-4"), NODE_ADMISSION, application)
    _refused(ErrorCode.SIGNATURE_INVALID, nodes.admit, forged.body, forged.signature)
    signed = sign(node_key_for("node-3"), NODE_ADMISSION, application)
    assert nodes.admit(signed.body, signed.signature).accepted
    assert world.state(schema.node_key("node-3"))["status"] == "pending"
    observation = HealthObservation(node_id="node-3", observed_at_ms=world.now, status="healthy",
                                    inventory=["work-1-aac"])
    assert nodes.record_health(observation).accepted


def test_a_rotation_is_signed_by_the_current_key(world, gateway):
    rotation = {"node_id": "node-1", "version": 2, "public_key": public_key_hex(node_key_for("node-1", 2)),
                "valid_from_ms": world.now + 60_000}
    nodes = NodeAdapter(gateway, actor_id=INGEST)
    by_new_key = sign(node_key_for("node-1", 2), KEY_ROTATION, rotation)
    _refused(ErrorCode.SIGNATURE_INVALID, nodes.rotate_key, by_new_key.body, by_new_key.signature)
    signed = sign(node_key_for("node-1", 1), KEY_ROTATION, rotation)
    outcome = nodes.rotate_key(signed.body, signed.signature)
    assert outcome.accepted
    assert nodes.rotate_key(signed.body, signed.signature).sequence == outcome.sequence


# Billing.

def _provider_event(event_id, event_type, *, account="listener-2", period="pp-77", **extra):
    event = {"id": event_id, "type": event_type, "created_ms": DAY * DAY_MS, "client_reference": account,
             "period": {"id": period, "start_ms": DAY * DAY_MS, "end_ms": (DAY + 30) * DAY_MS},
             "customer": {"email": "listener@example.com", "name": "A Listener"}, **extra}
    return sign(PROVIDER_KEY, BILLING_EVENT, event)


def _billing(gateway):
    return BillingAdapter(gateway, {"test-pay": public_key_hex(PROVIDER_KEY)}, actor_id=INGEST)


def test_a_provider_event_becomes_a_period_without_personal_data(world, gateway):
    opened = _provider_event("pay-1", "period.opened", amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    outcome = _billing(gateway).observe("test-pay", opened.body, opened.signature)
    assert outcome.accepted, outcome.result
    period_id = outcome.result["data"]["period_id"]
    period = world.state(schema.period_key(period_id))
    assert (period["account_id"], period["net_gbp"], period["provider_period_id"]) == ("listener-2", "999", "pp-77")
    journalled = canonical_bytes(world.owner.journal_entry(outcome.sequence)).decode()
    assert "listener@example.com" not in journalled and "A Listener" not in journalled
    assert b"listener@example.com" in gateway.evidence.get(period["events"][0]["evidence_digest"])
    again = _billing(gateway).observe("test-pay", opened.body, opened.signature)
    assert again.duplicate and again.result == outcome.result


def test_an_event_for_an_unknown_period_waits_without_being_journalled(world, gateway):
    cleared = _provider_event("pay-2", "payment.cleared", period="pp-88")
    head = world.owner.head()
    _refused(ErrorCode.NOT_FOUND, _billing(gateway).observe, "test-pay", cleared.body, cleared.signature)
    assert world.owner.head() == head
    opened = _provider_event("pay-1", "period.opened", period="pp-88",
                             amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    assert _billing(gateway).observe("test-pay", opened.body, opened.signature).accepted
    assert _billing(gateway).observe("test-pay", cleared.body, cleared.signature).accepted


def _plant(gateway, command_type, payload, *, actor_id, command_id, evidence=(), expected=()):
    """An envelope written straight into the envelope store, as a restored backup's admission tree could hold it."""
    planted = build_envelope(command_type, payload, command_id=command_id, actor_id=actor_id,
                             admitted_at_ms=gateway.now_ms(), evidence_hashes=evidence, expected_revisions=expected)
    gateway.envelopes.store(planted)
    return planted


def _honest_payload(billing, signed):
    """The payload and evidence digest the billing adapter builds for ``signed``, built but not submitted."""
    document = SignedDocument(BILLING_EVENT, signed.body, signed.signature)
    digest = billing.gateway.evidence.put(document.evidence_bytes())
    return billing._payload("test-pay", document.parse(ProviderEvent), digest), digest


def test_an_envelope_planted_under_a_webhooks_command_id_is_refused_not_submitted(world, gateway):
    opened = _provider_event("pay-1", "period.opened", amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    _plant(gateway, "RegisterAccount", {**_registration("mallory"), "kind": "staff", "roles": ["finance"]},
           actor_id=ADMIN, command_id=derived_command_id("ApplyBillingObservation", "test-pay", "pay-1"))
    head = world.owner.head()
    _refused(ErrorCode.COMMAND_ID_CONFLICT, _billing(gateway).observe, "test-pay", opened.body, opened.signature)
    assert world.owner.head() == head and world.owner.get(STATE, account_key("mallory")) is None


@pytest.mark.parametrize("change", [{"account_id": "listener-1"}, {"period_id": "period-of-someone-else"}],
                         ids=["another account", "another period"])
def test_a_planted_envelope_naming_the_events_evidence_for_other_terms_is_refused(world, gateway, change):
    opened = _provider_event("pay-1", "period.opened", amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    honest = _billing(gateway)
    payload, digest = _honest_payload(honest, opened)
    _plant(gateway, "ApplyBillingObservation", {**payload, **change}, actor_id=INGEST,
           command_id=derived_command_id("ApplyBillingObservation", "test-pay", "pay-1"), evidence=[digest])
    head = world.owner.head()
    _refused(ErrorCode.COMMAND_ID_CONFLICT, honest.observe, "test-pay", opened.body, opened.signature)
    assert world.owner.head() == head


def test_a_stored_envelope_never_submitted_is_submitted_as_it_was_stored(world, gateway):
    opened = _provider_event("pay-1", "period.opened", amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    billing = _billing(gateway)
    payload, digest = _honest_payload(billing, opened)
    first = gateway.envelope("ApplyBillingObservation", payload,
                             actor_id=INGEST, command_id=derived_command_id("ApplyBillingObservation", "test-pay",
                                                                           "pay-1"), evidence=[digest])
    world.now += 60_000
    outcome = billing.observe("test-pay", opened.body, opened.signature)  # the delivery whose first try died
    assert outcome.accepted and not outcome.duplicate
    assert world.owner.journal_entry(outcome.sequence)["envelope"] == first


def test_a_planted_envelope_admitted_in_the_future_cannot_move_the_ledgers_clock(world, gateway):
    """Everything in a grant's consumption but the nonce is public, and the nonce is not in the envelope."""
    grants = GrantAdapter(gateway, actor_id=COORDINATOR)
    issued, token = grants.issue(session_id=world.session(), node_id="node-1", rendition_id="work-1-aac",
                                 chunk_index=0, ttl_ms=60_000)
    grant = world.state(schema.grant_key(token["grant_id"]))
    command_id = derived_command_id("ConsumeGrant", token["grant_id"])
    planted = build_envelope("ConsumeGrant", {"grant_id": token["grant_id"], "request_id": "req-1",
                                              "nonce_hash": grant["nonce_hash"]}, command_id=command_id,
                             actor_id=COORDINATOR, admitted_at_ms=gateway.now_ms() + 10 * 365 * DAY_MS)
    gateway.envelopes.store(planted)
    head, floor = world.owner.head(), world.owner.admission_floor_ms()
    _refused(ErrorCode.COMMAND_ID_CONFLICT, grants.consume, token["grant_id"], token["nonce"], "req-1")
    _refused(ErrorCode.COMMAND_ID_CONFLICT, gateway.envelope, "ConsumeGrant", planted["payload"],
             actor_id=COORDINATOR, command_id=command_id)
    assert (world.owner.head(), world.owner.admission_floor_ms()) == (head, floor)


def test_a_planted_envelope_expecting_another_revision_cannot_burn_a_rotation(world, gateway):
    rotation = {"node_id": "node-1", "version": 2, "public_key": public_key_hex(node_key_for("node-1", 2)),
                "valid_from_ms": world.now + 60_000}
    signed = sign(node_key_for("node-1", 1), KEY_ROTATION, rotation)
    digest = gateway.evidence.put(SignedDocument(KEY_ROTATION, signed.body, signed.signature).evidence_bytes())
    node = world.owner.get(STATE, schema.node_key("node-1"))
    _plant(gateway, "RotateNodeKey", {**rotation, "reason": "scheduled", "evidence_digest": digest},
           actor_id=INGEST, command_id=derived_command_id("RotateNodeKey", digest), evidence=[digest],
           expected=[{"cf": STATE, "key": schema.node_key("node-1"), "revision": node.revision + 7}])
    head = world.owner.head()
    _refused(ErrorCode.COMMAND_ID_CONFLICT, NodeAdapter(gateway, actor_id=INGEST).rotate_key, signed.body,
             signed.signature)
    assert world.owner.head() == head


def test_a_planted_envelope_under_a_grants_command_id_is_refused(world, gateway):
    grants = GrantAdapter(gateway, actor_id=COORDINATOR)
    issued, token = grants.issue(session_id=world.session(), node_id="node-1", rendition_id="work-1-aac",
                                 chunk_index=0, ttl_ms=60_000)
    assert issued.accepted
    _plant(gateway, "RegisterAccount", {**_registration("mallory"), "kind": "staff", "roles": ["finance"]},
           actor_id=ADMIN, command_id=derived_command_id("ConsumeGrant", token["grant_id"]))
    head = world.owner.head()
    _refused(ErrorCode.COMMAND_ID_CONFLICT, grants.consume, token["grant_id"], token["nonce"], "req-1")
    assert world.owner.head() == head and world.owner.get(STATE, account_key("mallory")) is None


@pytest.mark.parametrize("input_id", ["webhook", "grant"])
def test_a_command_journalled_by_another_actor_under_an_inputs_id_does_not_answer_that_input(world, gateway, input_id):
    """Whoever got another command journalled under the ID an input derives cannot make it stand for that input."""
    opened = _provider_event("pay-1", "period.opened", amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    grants = GrantAdapter(gateway, actor_id=COORDINATOR)
    _, token = grants.issue(session_id=world.session(), node_id="node-1", rendition_id="work-1-aac", chunk_index=0,
                            ttl_ms=60_000)
    command_id, deliver = {
        "webhook": (derived_command_id("ApplyBillingObservation", "test-pay", "pay-1"),
                    lambda: _billing(gateway).observe("test-pay", opened.body, opened.signature)),
        "grant": (derived_command_id("ConsumeGrant", token["grant_id"]),
                  lambda: grants.consume(token["grant_id"], token["nonce"], "req-1")),
    }[input_id]
    squatted = gateway.submit(_plant(gateway, "RegisterAccount", _registration("listener-9"), actor_id=ADMIN,
                                     command_id=command_id))
    assert squatted.accepted
    head = world.owner.head()
    _refused(ErrorCode.COMMAND_ID_CONFLICT, deliver)
    assert world.owner.head() == head


def test_a_redelivered_input_is_answered_by_its_journalled_command_though_the_state_moved_on(world, gateway):
    opened = _provider_event("pay-1", "period.opened", amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    cleared = _provider_event("pay-2", "payment.cleared")
    billing = _billing(gateway)
    first = billing.observe("test-pay", opened.body, opened.signature)
    assert first.accepted and billing.observe("test-pay", cleared.body, cleared.signature).accepted
    again = billing.observe("test-pay", opened.body, opened.signature)
    assert again.duplicate and again.sequence == first.sequence


@pytest.mark.parametrize("planted", ["not json", "a list", "another command's envelope", "no actor", "a directory",
                                     "a dangling link", "a link to the input's envelope"])
def test_a_stored_file_that_is_not_the_inputs_envelope_is_refused_with_a_code(world, gateway, planted):
    opened = _provider_event("pay-1", "period.opened", amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    billing = _billing(gateway)
    payload, digest = _honest_payload(billing, opened)
    command_id = derived_command_id("ApplyBillingObservation", "test-pay", "pay-1")
    honest = build_envelope("ApplyBillingObservation", payload, command_id=command_id, actor_id=INGEST,
                            admitted_at_ms=gateway.now_ms(), evidence_hashes=[digest])
    content = {"not json": b"{", "a list": b"[]",
               "another command's envelope": canonical_bytes({**honest, "command_id": _id(99)}),
               "no actor": canonical_bytes({key: value for key, value in honest.items() if key != "actor_id"}),
               "a directory": None, "a dangling link": None, "a link to the input's envelope": None}[planted]
    gateway.envelopes.root.mkdir(parents=True, exist_ok=True)
    path = gateway.envelopes.root / f"{command_id}.json"
    if planted == "a directory":
        path.mkdir()
    elif planted == "a dangling link":
        path.symlink_to(gateway.envelopes.root / "nowhere.json")
    elif planted == "a link to the input's envelope":
        (gateway.envelopes.root.parent / "elsewhere.json").write_bytes(canonical_bytes(honest))
        path.symlink_to(gateway.envelopes.root.parent / "elsewhere.json")
    else:
        path.write_bytes(content)
    head = world.owner.head()
    _refused(ErrorCode.COMMAND_ID_CONFLICT, billing.observe, "test-pay", opened.body, opened.signature)
    assert world.owner.head() == head


def test_a_provider_event_must_carry_its_providers_signature(world, gateway):
    opened = _provider_event("pay-1", "period.opened", amounts={"currency": "GBP", "gross": "1199", "net": "999"})
    _refused(ErrorCode.SIGNATURE_INVALID, _billing(gateway).observe, "other-pay", opened.body, opened.signature)
    forged = sign(key_from_seed("not the provider"), BILLING_EVENT, orjson.loads(opened.body))
    _refused(ErrorCode.SIGNATURE_INVALID, _billing(gateway).observe, "test-pay", forged.body, forged.signature)


# Grants.

def test_a_grant_nonce_stays_with_the_caller_and_opens_its_grant_once(world, gateway):
    grants = GrantAdapter(gateway, actor_id=COORDINATOR)
    session_id = world.session()
    issued, token = grants.issue(session_id=session_id, node_id="node-1", rendition_id="work-1-aac", chunk_index=0,
                                 ttl_ms=60_000)
    assert issued.accepted
    assert token["nonce"] not in canonical_bytes(world.owner.journal_entry(issued.sequence)).decode()
    _refused(ErrorCode.SIGNATURE_INVALID, grants.consume, token["grant_id"], "00" * 32, "req-1")
    consumed = grants.consume(token["grant_id"], token["nonce"], "req-1")
    assert consumed.accepted
    assert grants.consume(token["grant_id"], token["nonce"], "req-2").sequence == consumed.sequence
    following, _ = grants.issue(session_id=session_id, node_id="node-1", rendition_id="work-1-aac", chunk_index=1,
                                ttl_ms=60_000)
    assert following.accepted
    assert world.state(schema.coordinator_key(COORDINATOR))["last_sequence"] == 2
