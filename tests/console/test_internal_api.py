"""The internal worker API: credentials, typed submits, retries, claims, reads and every error class."""

from __future__ import annotations

import time
import uuid
from http import HTTPStatus
from typing import Any

import orjson
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from ledger_engine.application.envelopes import build_envelope
from ledger_engine.canonical import sha256_hex
from ledger_engine.demo import demo_envelopes
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.genesis import default_genesis
from ledger_engine.layout import OUTBOX, STATE
from porto_console.internal_api import credentials, reads
from porto_console.internal_api.evidence import MAX_EVIDENCE_BYTES, evidence_commands
from porto_console.internal_api.commands import journalled_id
from porto_console.internal_api.errors import http_status
from porto_console.internal_api.models import WorkerCredential
from porto_console.ledger import close_owner, gateway, open_owner
from tests.support.payloads import deposit_evidence, funding

pytestmark = pytest.mark.django_db

COMMANDS = "/internal/commands"
WORKERS = {"ingest-1": ["ingest"], "signer-1": ["signer"], "committer-1": ["committer"],
           "committer-2": ["committer"], "fin-1": ["finance"]}


@pytest.fixture
def ledger(tmp_path, envelopes):
    """The process's ledger owner on a fresh ledger with the worker actors (and a finance person) provisioned."""
    owner = open_owner(tmp_path / "ledger", genesis=default_genesis())
    for actor, roles in WORKERS.items():
        kind = "staff" if "finance" in roles else "worker"  # money-moving roles are people's only
        assert owner.submit(envelopes.account(actor, kind=kind, roles=roles)).accepted
    yield owner
    close_owner()


class Worker:
    """A worker's HTTP client: JSON in, JSON out, its bearer token on every request."""

    def __init__(self, token: str | None) -> None:
        self.client = Client(**({"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}))

    @classmethod
    def issued(cls, name: str, command_types: list[str]) -> "Worker":
        return cls(credentials.issue(name, name, command_types)[1])

    def post(self, path: str, body: Any, content_type: str = "application/json") -> Any:
        data = body if isinstance(body, (str, bytes)) else orjson.dumps(body)
        return self.client.post(path, data=data, content_type=content_type)

    def get(self, path: str, **query: Any) -> Any:
        return self.client.get(path, query)


@pytest.fixture
def ingest(ledger) -> Worker:
    return Worker.issued("ingest-1", ["ImportFunding"])


def import_funding(lot_id: str = "lot-1", amount: str = "5000000", **fields: Any) -> dict[str, Any]:
    """An ImportFunding command request with a fresh command ID; its deposit evidence is stored."""
    payload = funding(lot_id, amount)
    assert gateway().evidence.put(f"evidence:{lot_id}:0".encode()) == deposit_evidence(payload)
    return {"command_id": str(uuid.uuid4()), "command_type": "ImportFunding", "payload": payload,
            "evidence_hashes": [deposit_evidence(payload)], **fields}


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    body = response.json()
    assert (response.status_code, body["code"]) == (status, code), body
    assert set(body) == {"code", "detail"} and body["detail"]
    return body


def assert_outcome(response: Any, outcome: str, code: str) -> dict[str, Any]:
    body = response.json()
    assert (response.status_code, body["outcome"], body["code"]) == (200, outcome, code), body
    return body


def nothing_stored(command_id: str, actor_id: str = "ingest-1") -> bool:
    return gateway().envelopes.load(journalled_id(actor_id, command_id)) is None


# Submitting a command.

def test_accepted_command_is_journalled_as_the_credentials_actor(ledger, ingest):
    request = import_funding()
    outcome = assert_outcome(ingest.post(COMMANDS, request), "accepted", "OK")
    assert (outcome["sequence"], outcome["duplicate"]) == (ledger.head().sequence, False)
    envelope = ledger.journal_entry(outcome["sequence"])["envelope"]
    assert envelope == gateway().envelopes.load(journalled_id("ingest-1", request["command_id"]))
    assert (envelope["actor_id"], envelope["ruleset_version"], envelope["payload"]) == (
        "ingest-1", "london-1", request["payload"])
    assert ledger.get(STATE, "lot/lot-1").data["received"] == "5000000"


def test_retried_submit_with_the_same_command_id_has_exactly_one_outcome(ledger, ingest):
    request = import_funding()
    first = ingest.post(COMMANDS, request).json()
    again = ingest.post(COMMANDS, request).json()
    assert again == {**first, "duplicate": True}
    assert ledger.head().sequence == first["sequence"]


def test_a_stored_envelope_the_ledger_never_saw_is_readmitted_with_a_fresh_time_after_a_lost_submit(ledger, ingest):
    """The first attempt stored its envelope long ago and never reached the ledger. Its time is below the
    ledger's last one, so the retry re-admits it: same command ID and request, a fresh admission time."""
    request = import_funding()
    stored = gateway().envelopes.store(build_envelope(
        "ImportFunding", request["payload"], command_id=journalled_id("ingest-1", request["command_id"]),
        actor_id="ingest-1",
        admitted_at_ms=1_000, evidence_hashes=request["evidence_hashes"]))
    head, floor = ledger.head(), ledger.admission_floor_ms()
    assert floor > 1_000

    outcome = assert_outcome(ingest.post(COMMANDS, request), "accepted", "OK")
    assert outcome["sequence"] == head.sequence + 1
    journalled = ledger.journal_entry(outcome["sequence"])["envelope"]
    assert journalled == {**stored, "admitted_at_ms": journalled["admitted_at_ms"]} == gateway().envelopes.load(
        journalled_id("ingest-1", request["command_id"]))
    assert journalled["admitted_at_ms"] >= floor
    assert ingest.post(COMMANDS, request).json() == {**outcome, "duplicate": True}


def test_forged_actor_and_admission_fields_are_refused_and_change_nothing(ledger, ingest):
    head = ledger.head()
    for field, value in (("actor_id", "genesis-admin"), ("admitted_at_ms", 1), ("ruleset_version", "london-1"),
                         ("schema_version", 1)):
        request = import_funding(**{field: value})
        body = assert_error(ingest.post(COMMANDS, request), 422, "UNKNOWN_FIELD")
        assert field in body["detail"] and nothing_stored(request["command_id"])
    assert ledger.head() == head


def test_the_ledger_checks_the_credentials_actor_whatever_the_credential_allows(ledger, envelopes):
    rogue = Worker.issued("ingest-1", ["RegisterAccount"])
    account = envelopes.account("rogue-admin", roles=["admin"])
    request = {"command_id": account["command_id"], "command_type": "RegisterAccount", "payload": account["payload"]}
    assert_outcome(rogue.post(COMMANDS, request), "rejected", "CAPABILITY_MISSING")
    assert ledger.get(STATE, "account/rogue-admin") is None


def test_business_rejections_answer_200_with_their_journalled_code(ledger, ingest):
    ingest.post(COMMANDS, import_funding("lot-1"))
    duplicate_lot = ingest.post(COMMANDS, import_funding("lot-1"))
    stale = ingest.post(COMMANDS, import_funding("lot-2", expected_revisions=[
        {"cf": "state", "key": "lot/lot-2", "revision": 1}]))
    for response, code in ((duplicate_lot, "ALREADY_EXISTS"), (stale, "STALE_REVISION")):
        outcome = assert_outcome(response, "rejected", code)
        assert ledger.resolve(journalled_id("ingest-1", outcome["command_id"])).code == code
    assert ledger.get(STATE, "lot/lot-2") is None


# Refusals before admission: each has its status and code and changes nothing.

def test_malformed_bodies_are_400_and_change_nothing(ledger, ingest):
    head = ledger.head()
    request = import_funding()
    for body in ("{not json", b"\xff\xfe", "[1, 2]", '"text"', "",
                 {key: value for key, value in request.items() if key != "payload"},
                 {**request, "command_id": 7}, {**request, "command_id": "not-a-uuid"},
                 {**request, "payload": []}, {**request, "expected_revisions": [{"cf": "state"}]}):
        assert_error(ingest.post(COMMANDS, body), 400, "MALFORMED_ENVELOPE")
    assert ledger.head() == head
    assert nothing_stored(request["command_id"])


@pytest.mark.parametrize(("change", "code"), [
    (lambda request: request["payload"].update(unexpected=1), "UNKNOWN_FIELD"),
    (lambda request: request["payload"].update(amount="-5"), "INVALID_AMOUNT"),
    (lambda request: request["payload"].update(amount="1e6"), "INVALID_AMOUNT"),
    (lambda request: request["payload"].update(amount="18446744073709551616"), "INVALID_AMOUNT"),
    (lambda request: request["payload"]["deposit"].update(event_index=1.5), "INVALID_NUMBER"),
    (lambda request: request["payload"].update(asset="GBP"), "INVALID_PAYLOAD"),
    (lambda request: request.update(evidence_hashes=["0" * 64]), "INVALID_REFERENCE"),
])
def test_invalid_commands_are_422_and_change_nothing(ledger, ingest, change, code):
    head = ledger.head()
    request = import_funding()
    change(request)
    assert_error(ingest.post(COMMANDS, request), 422, code)
    assert ledger.head() == head
    assert nothing_stored(request["command_id"])


def test_an_oversized_body_is_413_before_it_is_read(ledger, ingest):
    head = ledger.head()
    request = import_funding()
    request["payload"]["padding"] = "x" * (1024 * 1024)
    assert_error(ingest.post(COMMANDS, request), 413, "COMMAND_TOO_LARGE")
    assert ledger.head() == head
    assert nothing_stored(request["command_id"])


def test_reusing_a_command_id_for_another_command_is_409(ledger, ingest, envelopes):
    first = import_funding("lot-1")
    ingest.post(COMMANDS, first)
    head = ledger.head()
    assert_error(ingest.post(COMMANDS, {**import_funding("lot-2"), "command_id": first["command_id"]}),
                 409, "COMMAND_ID_CONFLICT")
    assert ledger.head() == head and ledger.get(STATE, "lot/lot-2") is None


def test_a_workers_command_ids_are_its_own(ledger, ingest, envelopes):
    """Workers derive their IDs from facts others can read: an ID another actor used first is another command,
    never a conflict that would refuse the honest one for good."""
    taken = import_funding("lot-1")
    assert_outcome(Worker.issued("signer-1", ["ImportFunding"]).post(COMMANDS, taken), "rejected", "CAPABILITY_MISSING")
    console_command = envelopes.account("fin-2", roles=["finance"])
    console_command["admitted_at_ms"] = ledger.admission_floor_ms()  # not before the gateway's commands
    ledger.submit(console_command)
    mine = assert_outcome(ingest.post(COMMANDS, {**import_funding("lot-2"), "command_id": taken["command_id"]}),
                          "accepted", "OK")
    assert mine["command_id"] == taken["command_id"]
    assert ingest.get(f"{COMMANDS}/{taken['command_id']}").json()["sequence"] == mine["sequence"]
    assert_outcome(ingest.post(COMMANDS, import_funding("lot-3", command_id=console_command["command_id"])),
                   "accepted", "OK")
    assert ledger.get(STATE, "lot/lot-2").data["received"] == ledger.get(STATE, "lot/lot-3").data["received"]


def test_command_types_outside_the_credential_are_403(ledger):
    signer = Worker.issued("signer-1", credentials.commands_for_role("signer"))
    head = ledger.head()
    for command_type in ("ImportFunding", "RegisterAccount", "NoSuchCommand"):
        body = assert_error(signer.post(COMMANDS, {**import_funding(), "command_type": command_type}),
                            403, "COMMAND_NOT_ALLOWED")
        assert command_type in body["detail"]
    assert ledger.head() == head


def test_a_record_not_ready_is_409_not_a_server_error():
    """INVALID_STATE (a statement file before its root is anchored, say) is the caller's to wait for: a 5xx would
    read as an unreachable ledger to a worker's client, which retries it forever."""
    assert http_status(ErrorCode.INVALID_STATE) == HTTPStatus.CONFLICT


def test_a_halted_ledger_is_503(ledger, ingest, committer):
    head = ledger.head()
    ledger.executor.halted = LedgerError(ErrorCode.LEDGER_HALTED, "synchronous write failed")
    assert_error(ingest.post(COMMANDS, import_funding()), 503, "LEDGER_HALTED")
    assert_error(committer.get("/internal/effects"), 503, "LEDGER_HALTED")
    assert ledger.head() == head


def test_an_unexpected_failure_is_500_with_a_stable_code(ledger, ingest, monkeypatch):
    def broken() -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(reads, "owner", broken)
    body = assert_error(ingest.get("/internal/head"), 500, "INTERNAL_ERROR")
    assert "disk on fire" not in body["detail"]


# Credentials.

@pytest.mark.parametrize("authorization", [
    None, "Bearer", "Basic dXNlcjpwYXNz", "Bearer not-a-token",
    "Bearer porto-worker.0000000000000000.secret", "Bearer porto-worker.00\x0000.secret",
])
def test_missing_or_unknown_credentials_are_401(ledger, authorization):
    head = ledger.head()
    client = Client(**({"HTTP_AUTHORIZATION": authorization} if authorization else {}))
    response = client.post(COMMANDS, data=orjson.dumps(import_funding()), content_type="application/json")
    assert_error(response, 401, "UNAUTHENTICATED")
    assert response["WWW-Authenticate"] == "Bearer"
    assert_error(client.get("/internal/head"), 401, "UNAUTHENTICATED")
    assert ledger.head() == head


def test_a_wrong_secret_for_a_real_selector_is_401(ledger):
    token = credentials.issue("ingest-1", "ingest-1", [])[1]
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert_error(Worker(forged).get("/internal/head"), 401, "UNAUTHENTICATED")


def test_a_revoked_credential_is_401(ledger, ingest):
    assert ingest.get("/internal/head").status_code == 200
    credentials.revoke("ingest-1")
    head = ledger.head()
    body = assert_error(ingest.post(COMMANDS, import_funding()), 401, "UNAUTHENTICATED")
    assert "revoked" in body["detail"]
    assert ledger.head() == head


def test_only_a_hash_of_the_secret_is_stored_and_use_is_recorded(ledger):
    credential, token = credentials.issue("ingest-1", "ingest-1", [])
    secret = token.rsplit(".", 1)[1]
    assert secret not in (credential.secret_sha256, credential.selector) and len(credential.secret_sha256) == 64
    assert credential.last_used_at is None
    Worker(token).get("/internal/head")
    credential.refresh_from_db()
    assert credential.last_used_at is not None


def test_management_command_issues_lists_and_revokes(ledger, capsys):
    call_command("worker_credentials", "issue", "committer-1", "--actor", "committer-1", "--role", "committer")
    issued = orjson.loads(capsys.readouterr().out)
    assert issued["command_types"] == credentials.commands_for_role("committer") == ["ClaimEffect", "CompleteEffect"]
    assert Worker(issued["token"]).get("/internal/head").status_code == 200

    call_command("worker_credentials", "list")
    listed = orjson.loads(capsys.readouterr().out)
    assert "token" not in listed and listed["revoked_at"] is None

    call_command("worker_credentials", "revoke", "committer-1")
    assert orjson.loads(capsys.readouterr().out)["revoked_at"] is not None
    assert Worker(issued["token"]).get("/internal/head").status_code == 401


@pytest.mark.parametrize(("arguments", "message"), [
    (["issue", "w", "--actor", "a/b", "--command", "ImportFunding"], "not a ledger actor ID"),
    (["issue", "w", "--actor", "w", "--command", "NoSuchCommand"], "unknown command types"),
    (["issue", "w", "--actor", "w", "--role", "wizard"], "unknown role"),
    (["revoke", "nobody"], "no active credential"),
])
def test_management_command_refuses_bad_requests(ledger, arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("worker_credentials", *arguments)
    assert not WorkerCredential.objects.exists()


def test_one_active_credential_per_worker(ledger):
    token = credentials.issue("ingest-1", "ingest-1", [])[1]
    with pytest.raises(credentials.CredentialError, match="already has an active credential"):
        credentials.issue("ingest-1", "ingest-1", [])
    credentials.revoke("ingest-1")
    assert credentials.issue("ingest-1", "ingest-1", [])[1] != token


# Evidence.

def test_evidence_is_stored_by_digest_for_commands_to_name(ledger, ingest):
    response = ingest.post("/internal/evidence", b"evidence:lot-9:0", content_type="application/octet-stream")
    request = import_funding("lot-9")
    assert response.json() == {"sha256": request["evidence_hashes"][0]}
    assert gateway().evidence.get(response.json()["sha256"]) == b"evidence:lot-9:0"
    assert_outcome(ingest.post(COMMANDS, request), "accepted", "OK")


def test_evidence_needs_bytes_and_a_credential_that_may_submit_commands(ledger, ingest):
    assert_error(ingest.post("/internal/evidence", b"", content_type="application/octet-stream"),
                 400, "INVALID_REQUEST")
    reader = Worker.issued("reader", [])
    response = reader.post("/internal/evidence", b"bytes", content_type="application/octet-stream")
    assert_error(response, 403, "COMMAND_NOT_ALLOWED")


def test_only_a_credential_that_submits_a_command_citing_evidence_stores_evidence(ledger):
    refused = {"catalogue": ["ImportCatalogue", "ActivateWork"], "coordinator": credentials.commands_for_role(
        "coordinator"), "maintenance": credentials.commands_for_role("maintenance")}
    for name, command_types in refused.items():
        response = Worker.issued(name, command_types).post("/internal/evidence", b"bytes",
                                                           content_type="application/octet-stream")
        assert "cites evidence" in assert_error(response, 403, "COMMAND_NOT_ALLOWED")["detail"]
    assert not gateway().evidence.root.exists() or not any(gateway().evidence.root.iterdir())
    for role in ("signer", "observer", "dispatcher", "committer", "ingest"):
        worker = Worker.issued(f"{role}-worker", credentials.commands_for_role(role))
        response = worker.post("/internal/evidence", role.encode(), content_type="application/octet-stream")
        assert gateway().evidence.get(response.json()["sha256"]) == role.encode()


def test_the_command_types_citing_evidence_are_declared_in_the_registry():
    declared = evidence_commands()
    assert declared == {"ImportFunding", "FreezeArtifact", "UpdateRecipient", "RecordSignedAttempt",
                        "RecordLandedAttempt", "RecordTransferObservation", "RecordCommitmentObservation",
                        "CompleteEffect", "AdmitNode", "ChangeNodeStatus", "RotateNodeKey", "DisableWork",
                        "ApplyBillingObservation", "RecordReceipt", "RecordPeerResult", "RequestCorrection"}
    assert {e["command_type"] for e in demo_envelopes(7, listeners=2, days=1) if e["evidence_hashes"]} <= declared


def test_an_evidence_item_over_the_cap_is_413_and_stores_nothing(ledger, ingest):
    at_cap = b"e" * MAX_EVIDENCE_BYTES
    assert gateway().evidence.get(ingest.post("/internal/evidence", at_cap,
                                              content_type="application/octet-stream").json()["sha256"]) == at_cap
    response = ingest.post("/internal/evidence", at_cap + b"e", content_type="application/octet-stream")
    assert str(MAX_EVIDENCE_BYTES) in assert_error(response, 413, "EVIDENCE_TOO_LARGE")["detail"]
    assert [path.name for path in gateway().evidence.root.rglob("*") if path.is_file()] == [sha256_hex(at_cap)]


def test_storing_evidence_again_mends_a_copy_the_disk_damaged(ledger, ingest):
    request = import_funding("lot-9")
    digest = request["evidence_hashes"][0]
    gateway().evidence.path_of(digest).write_bytes(b"")
    assert_error(ingest.post(COMMANDS, request), 422, "INVALID_REFERENCE")
    response = ingest.post("/internal/evidence", b"evidence:lot-9:0", content_type="application/octet-stream")
    assert response.json() == {"sha256": digest} and gateway().evidence.get(digest) == b"evidence:lot-9:0"
    assert_outcome(ingest.post(COMMANDS, request), "accepted", "OK")


# Effects: list, claim, complete.

@pytest.fixture
def anchors(ledger, envelopes) -> list[str]:
    """Three frozen batches, each with a pending ``batch.anchor`` effect."""
    effect_ids = [f"anchor-{n}" for n in range(3)]
    for n, effect_id in enumerate(effect_ids):
        artifact_hash = gateway().evidence.put(f"artifact {n}".encode())
        steps = [({"action": "prepare", "kind": "allocation", "window_start_ms": 0, "window_end_ms": 1}, []),
                 ({"action": "freeze", "artifact_ref": f"artifact-{n}", "artifact_hash": artifact_hash, "count": 1,
                   "anchor_effect_id": effect_id}, [artifact_hash])]
        for step, evidence in steps:
            assert ledger.submit(envelopes("FreezeArtifact", {"batch_id": f"batch-{n}", "step": step},
                                           actor="fin-1", evidence=evidence)).accepted
    return effect_ids


@pytest.fixture
def committer(ledger) -> Worker:
    return Worker.issued("committer-1", credentials.commands_for_role("committer"))


def claim_body(*, revision: int = 1, lease_ms: int = 60_000) -> dict[str, Any]:
    return {"command_id": str(uuid.uuid4()), "expected_revision": revision,
            "expires_at_ms": time.time_ns() // 1_000_000 + lease_ms}


def claim(worker: Worker, effect_id: str, body: dict[str, Any] | None = None, *, revision: int = 1) -> Any:
    return worker.post(f"/internal/effects/{effect_id}/claim", body or claim_body(revision=revision))


def test_effects_are_listed_by_status_and_kind_in_pages_at_one_sequence(ledger, anchors, committer):
    first = committer.get("/internal/effects", status="pending", limit=2).json()
    assert first["sequence"] == ledger.head().sequence
    assert [effect["effect_id"] for effect in first["effects"]] == anchors[:2]
    assert first["effects"][0] == {**ledger.get(OUTBOX, anchors[0]).data, "revision": 1}
    second = committer.get("/internal/effects", status="pending", limit=2, cursor=first["next_cursor"]).json()
    assert ([effect["effect_id"] for effect in second["effects"]], second["next_cursor"]) == (anchors[2:], None)

    assert len(committer.get("/internal/effects", kind="batch.anchor").json()["effects"]) == 3
    assert committer.get("/internal/effects", kind="payment.transfer").json()["effects"] == []
    assert committer.get("/internal/effects", status="done").json()["effects"] == []


def test_one_effect_is_read_with_its_revision_and_claim(ledger, anchors, committer):
    assert committer.get(f"/internal/effects/{anchors[0]}").json() == {**ledger.get(OUTBOX, anchors[0]).data,
                                                                      "revision": 1}
    assert_error(committer.get("/internal/effects/no-such-effect"), 404, "NOT_FOUND")


@pytest.mark.parametrize("method, path", [("get", "/internal/effects/..%2F..%2Fx"), ("get", "/internal/nothing"),
                                          ("post", "/internal/effects/e-1/claim/more"), ("get", "/internal/")])
def test_a_path_under_internal_that_no_route_matches_is_the_apis_404(ledger, committer, method, path):
    for client in (committer.client, Client()):
        response = getattr(client, method)(path)
        assert response["Content-Type"].startswith("application/json")
        assert_error(response, 404, "NOT_FOUND")


@pytest.mark.parametrize("query", [{"limit": 0}, {"limit": 201}, {"limit": "ten"}, {"status": "a/b"},
                                   {"cursor": "no-slash"}, {"kind": ""}])
def test_bad_effect_queries_are_400(ledger, committer, query):
    assert_error(committer.get("/internal/effects", **query), 400, "INVALID_REQUEST")


def test_a_claimed_effect_moves_to_claimed_for_the_claiming_worker(ledger, anchors, committer):
    outcome = assert_outcome(claim(committer, anchors[0]), "accepted", "OK")
    assert ledger.journal_entry(outcome["sequence"])["envelope"]["actor_id"] == "committer-1"
    claimed = committer.get("/internal/effects", status="claimed").json()["effects"]
    assert [(effect["effect_id"], effect["revision"], effect["claim"]["worker_id"]) for effect in claimed] == [
        (anchors[0], 2, "committer-1")]
    assert len(committer.get("/internal/effects").json()["effects"]) == 2


def test_a_retried_claim_has_exactly_one_outcome(ledger, anchors, committer):
    body = claim_body()
    first = claim(committer, anchors[0], body).json()
    again = claim(committer, anchors[0], body).json()
    assert again == {**first, "duplicate": True}
    assert ledger.get(OUTBOX, anchors[0]).revision == 2


def test_claims_race_and_staleness_are_journalled_rejections(ledger, anchors, committer):
    rival = Worker.issued("committer-2", credentials.commands_for_role("committer"))
    assert_outcome(claim(committer, anchors[0]), "accepted", "OK")
    assert_outcome(claim(rival, anchors[0], revision=2), "rejected", "CLAIM_HELD")
    assert_outcome(claim(rival, anchors[1], revision=7), "rejected", "STALE_REVISION")
    assert ledger.get(OUTBOX, anchors[0]).data["claim"]["worker_id"] == "committer-1"


def test_claims_are_refused_outside_the_credential_and_for_forged_fields(ledger, anchors, committer):
    head = ledger.head()
    assert_error(claim(Worker.issued("signer-1", ["RecordSignedAttempt"]), anchors[0]), 403, "COMMAND_NOT_ALLOWED")
    assert_error(claim(committer, anchors[0], {**claim_body(), "worker_id": "committer-2"}), 422, "UNKNOWN_FIELD")
    assert_error(claim(committer, "no such effect"), 400, "INVALID_REQUEST")
    assert ledger.head() == head


def test_a_claimed_effect_is_completed_by_a_submitted_command(ledger, anchors, committer):
    assert_outcome(claim(committer, anchors[0]), "accepted", "OK")
    complete = {"command_id": str(uuid.uuid4()), "command_type": "CompleteEffect",
                "expected_revisions": [{"cf": "outbox", "key": anchors[0], "revision": 2}],
                "payload": {"effect_id": anchors[0], "outcome": "submitted", "transaction_hash": "0x" + "ab" * 32}}
    assert_outcome(committer.post(COMMANDS, complete), "accepted", "OK")
    done = committer.get("/internal/effects", status="done").json()["effects"]
    assert [(effect["effect_id"], effect["result"]["outcome"]) for effect in done] == [(anchors[0], "submitted")]


# Reads.

def test_head_reads_the_ledger_head(ledger, ingest):
    assert ingest.get("/internal/head").json() == ledger.head().as_json()


def test_journal_tree_reads_the_root_over_every_durable_entry(ledger, ingest):
    tree = ingest.get("/internal/journal-tree").json()
    assert tree == ledger.journal_tree() and tree["size"] == ledger.head().sequence
    assert tree["root"] == ledger.journal_root_at(tree["size"])


def test_resolve_returns_the_workers_own_outcomes_only(ledger, ingest, envelopes):
    request = import_funding()
    submitted = ingest.post(COMMANDS, request).json()
    assert ingest.get(f"{COMMANDS}/{request['command_id']}").json() == {**submitted, "duplicate": True}

    console_command = envelopes.account("fin-2", roles=["finance"])
    console_command["admitted_at_ms"] = ledger.admission_floor_ms()  # not before the gateway's commands
    ledger.submit(console_command)
    for command_id in (console_command["command_id"], str(uuid.uuid4())):
        assert_error(ingest.get(f"{COMMANDS}/{command_id}"), 404, "NOT_FOUND")
    assert_error(ingest.get(f"{COMMANDS}/not-a-uuid"), 400, "INVALID_REQUEST")


def test_openapi_schema_is_published_with_the_error_policy(ledger, admin_client):
    schema = admin_client.get("/internal/openapi.json").json()
    assert {"/internal/commands", "/internal/commands/{command_id}", "/internal/head", "/internal/effects",
            "/internal/effects/{effect_id}", "/internal/effects/{effect_id}/claim", "/internal/evidence", "/internal/batch",
            "/internal/dispatch",
            "/internal/payments/{payment_id}", "/internal/attempts", "/internal/batches",
            "/internal/maintenance/backups", "/internal/journal-tree",
            "/internal/statements/{statement_id}/file",
            "/internal/statements/{statement_id}/parts/{line_id}"} == set(schema["paths"])
    submit = schema["paths"]["/internal/commands"]["post"]
    assert {"200", "400", "401", "403", "409", "413", "422", "503"} <= set(submit["responses"])
    assert "Accepted and rejected outcomes both answer 200" in submit["description"]
    assert "Business rejections are not errors" in schema["info"]["description"]
    assert schema["components"]["securitySchemes"]["WorkerBearer"]["scheme"] == "bearer"


def forged_credential(name: str, actor_id: str, command_types: list[str]) -> Worker:
    """A credential written to the database as ``issue`` never would."""
    selector, secret = "0123456789abcdef", "forged-secret"
    WorkerCredential.objects.create(name=name, actor_id=actor_id, command_types=command_types, selector=selector,
                                    secret_sha256=credentials._digest(secret))
    return Worker(f"{credentials.TOKEN_PREFIX}.{selector}.{secret}")


@pytest.mark.parametrize(("actor_id", "command_type"), [("ledger-owner", "ImportFunding"),
                                                        ("ingest-1", "FreezeDayChunk")])
def test_the_ledgers_own_actor_and_commands_are_refused_owner_only_and_store_nothing(ledger, actor_id, command_type):
    """Only the owner submits as ``ledger-owner``, and only it submits FreezeDayChunk, in process (docs/adr/0073)."""
    with pytest.raises(credentials.CredentialError, match="OWNER_ONLY"):
        credentials.issue("worker-9", actor_id, [command_type])
    worker = forged_credential("worker-9", actor_id, [command_type])
    head = ledger.head()
    request = {**import_funding(), "command_type": command_type}
    body = assert_error(worker.post(COMMANDS, request), 403, "OWNER_ONLY")
    assert "owner" in body["detail"]
    assert nothing_stored(request["command_id"], actor_id) and ledger.head() == head
    assert http_status(ErrorCode.OWNER_ONLY) == HTTPStatus.FORBIDDEN
