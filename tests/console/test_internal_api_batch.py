"""``POST /internal/batch``: evidence and commands in one round trip, each command answered as if sent alone."""

from __future__ import annotations

import time
import uuid

import pytest

from ledger_engine.application.envelopes import build_envelope
from ledger_engine.canonical import sha256_hex
from ledger_engine.layout import STATE
from porto_console.internal_api.api import LEDGER_TIME_HEADER
from porto_console.internal_api.evidence import MAX_EVIDENCE_BYTES
from porto_console.ledger import gateway
from tests.console.test_internal_api import (  # noqa: F401 (fixtures)
    COMMANDS, Worker, assert_error, import_funding, ingest, ledger, nothing_stored,
)
from tests.support.payloads import deposit_evidence, funding

pytestmark = pytest.mark.django_db

BATCH = "/internal/batch"


def funding_request(lot_id: str) -> dict:
    """An ImportFunding request whose deposit evidence is not stored yet: the batch stores it."""
    payload = funding(lot_id, "5000000")
    return {"command_id": str(uuid.uuid4()), "command_type": "ImportFunding", "payload": payload,
            "evidence_hashes": [deposit_evidence(payload)]}


def test_evidence_is_stored_first_and_each_command_is_answered_as_if_sent_alone(ledger, ingest):
    requests = [funding_request(f"lot-{number}") for number in range(5)]
    evidence = [f"evidence:lot-{number}:0".encode() for number in range(5)]
    answer = ingest.post(BATCH, {"evidence": [item.hex() for item in evidence], "commands": requests})
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["evidence"] == [sha256_hex(item) for item in evidence]
    assert [(result["status"], result["outcome"]["outcome"], result["error"]) for result in body["results"]] == \
        [(200, "accepted", None)] * 5
    assert [result["outcome"]["command_id"] for result in body["results"]] == [r["command_id"] for r in requests]
    assert all(ledger.get(STATE, f"lot/lot-{number}").data["received"] == "5000000" for number in range(5))
    again = ingest.post(BATCH, {"commands": requests}).json()
    assert [result["outcome"] for result in again["results"]] == \
        [{**result["outcome"], "duplicate": True} for result in body["results"]]
    single = ingest.post(COMMANDS, requests[2]).json()
    assert single == {**body["results"][2]["outcome"], "duplicate": True}


def test_a_refused_command_gets_its_own_error_and_the_others_still_run(ledger, ingest):
    good, unknown_field, unstored = import_funding("lot-1"), import_funding("lot-2"), funding_request("lot-3")
    unknown_field["payload"]["unexpected"] = 1
    body = ingest.post(BATCH, {"commands": [good, unknown_field, unstored]}).json()
    assert [(r["status"], r["error"] and r["error"]["code"]) for r in body["results"]] == \
        [(200, None), (422, "UNKNOWN_FIELD"), (422, "INVALID_REFERENCE")]
    assert ledger.get(STATE, "lot/lot-1") is not None and ledger.get(STATE, "lot/lot-2") is None
    assert nothing_stored(unknown_field["command_id"]) and nothing_stored(unstored["command_id"])


def test_evidence_refused_refuses_the_whole_batch_and_submits_nothing(ledger, ingest):
    head = ledger.head()
    request = funding_request("lot-1")
    good = b"evidence:lot-1:0"
    for evidence, status, code in (([good.hex(), "00" * (MAX_EVIDENCE_BYTES + 1)], 413, "EVIDENCE_TOO_LARGE"),
                                   ([good.hex(), "zz"], 400, "MALFORMED_ENVELOPE"),
                                   ([good.hex()] * 101, 400, "MALFORMED_ENVELOPE")):
        assert_error(ingest.post(BATCH, {"evidence": evidence, "commands": [request]}), status, code)
    assert ledger.head() == head and nothing_stored(request["command_id"])
    assert_error(ingest.post(BATCH, {"commands": [request] * 101}), 400, "MALFORMED_ENVELOPE")
    assert_error(ingest.post(BATCH, {"commands": [], "unexpected": []}), 422, "UNKNOWN_FIELD")
    assert sha256_hex(good) not in gateway().evidence


def test_a_credential_that_stores_no_evidence_cannot_store_it_in_a_batch(ledger):
    funder = Worker.issued("fin-1", ["RegisterAccount"])
    assert_error(funder.post(BATCH, {"evidence": [b"anything".hex()]}), 403, "COMMAND_NOT_ALLOWED")
    assert sha256_hex(b"anything") not in gateway().evidence


def test_command_types_outside_the_credential_are_refused_one_by_one(ledger, ingest):
    body = ingest.post(BATCH, {"commands": [{**import_funding(), "command_type": "RegisterAccount"}]}).json()
    assert (body["results"][0]["status"], body["results"][0]["error"]["code"]) == (403, "COMMAND_NOT_ALLOWED")


def test_every_answer_names_the_ledgers_admission_clock(ledger, ingest):
    before = time.time_ns() // 1_000_000
    for response in (ingest.get("/internal/head"), ingest.post(BATCH, {"commands": []}),
                     Worker(None).get("/internal/head")):
        stamped = int(response[LEDGER_TIME_HEADER])
        assert before <= stamped <= time.time_ns() // 1_000_000 + 1
    assert gateway().now_ms() >= stamped


def test_a_command_type_no_ledger_knows_refuses_the_whole_batch(ledger, ingest):
    """A malformed batch is refused whole, as a malformed single command is: nothing of it is stored or run."""
    head = ledger.head()
    good = import_funding("lot-1")
    body = assert_error(ingest.post(BATCH, {"commands": [good, {**import_funding("lot-2"), "command_type": "Nope"}]}),
                        400, "MALFORMED_ENVELOPE")
    assert "Nope" in body["detail"]
    assert ledger.head() == head and nothing_stored(good["command_id"])


def journalled_envelopes(ledger, after: int) -> list[dict]:
    return [ledger.journal_entry(sequence)["envelope"] for sequence in range(after + 1, ledger.head().sequence + 1)]


def test_a_batchs_commands_share_one_synchronous_write_earliest_admission_first(ledger, ingest):
    groups = []
    ledger.add_command_listener(groups.append)
    requests = [import_funding(f"lot-{number}") for number in range(20)]
    head = ledger.head().sequence
    body = ingest.post(BATCH, {"commands": requests}).json()
    assert [result["outcome"]["outcome"] for result in body["results"]] == ["accepted"] * 20
    assert [group.size for group in groups] == [20]
    times = [envelope["admitted_at_ms"] for envelope in journalled_envelopes(ledger, head)]
    assert times == sorted(times) and len(times) == 20


def test_a_batch_overtaken_by_a_later_command_is_admitted_again_and_each_command_answered(ledger, ingest,
                                                                                        monkeypatch):
    """Another caller's command, admitted after the batch's envelopes were stored, is journalled first: the batch's
    commands are refused for their admission time, admitted again with a later one, and run once each."""
    admission = gateway()
    queue_all = admission.queue_all

    queued = []

    def overtaken(envelopes):
        queued.append(len(envelopes))
        if not envelopes:
            return queue_all(envelopes)
        later = max(envelope["admitted_at_ms"] for envelope in envelopes) + 5
        assert ledger.submit(build_envelope(
            "RegisterAccount", {"account_id": "acct-late", "kind": "staff", "identity_digest": "ab" * 32,
                                "roles": []}, command_id=str(uuid.uuid4()), actor_id="fin-1",
            admitted_at_ms=later)).outcome == "rejected"  # a person may not register accounts: journalled anyway
        return queue_all(envelopes)

    monkeypatch.setattr(admission, "queue_all", overtaken)
    requests = [import_funding(f"lot-{number}") for number in range(5)]
    head = ledger.head().sequence
    body = ingest.post(BATCH, {"commands": requests}).json()
    assert [result["outcome"]["outcome"] for result in body["results"]] == ["accepted"] * 5
    overtaking, *batch = journalled_envelopes(ledger, head)
    assert overtaking["actor_id"] == "fin-1" and len(batch) == 5
    assert all(envelope["admitted_at_ms"] >= overtaking["admitted_at_ms"] for envelope in batch)
    assert all(admission.envelopes.load(envelope["command_id"]) == envelope for envelope in batch)
    again = ingest.post(BATCH, {"commands": requests}).json()
    assert [(result["outcome"]["sequence"], result["outcome"]["duplicate"]) for result in again["results"]] == \
        [(result["outcome"]["sequence"], True) for result in body["results"]]
    assert queued[-1] == 0  # the retry is answered from the journal: nothing goes to the ledger again
