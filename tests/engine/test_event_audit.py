"""Attack 8: every domain event names its actor, target, payload digest, reason and admission time
(docs/spec/domain-model-and-state-machines.md §6), and material money records carry a correlation ID and their
provenance."""

from __future__ import annotations

import hashlib
from collections import Counter

import orjson
import rfc8785

from ledger_engine.domain.event_audit import PAYLOAD_DOMAIN
from ledger_engine.domain.registry import registered_types
from ledger_engine.keys import seq20
from ledger_engine.layout import EVENTS, JOURNAL, STATE
from ledger_engine.storage.rocks import RocksStore

MATERIAL = ("lot/", "budget/", "budget_refund/", "allocation_line/", "correction_request/", "correction/",
            "payment_run/", "payment/", "payment_attempt/", "recipient_update/", "batch/", "statement/")


def test_every_event_carries_its_audit_fields(demo_ledger):
    seen = Counter()
    with RocksStore(demo_ledger.data, read_only=True) as store:
        for raw_key, raw in store.scan(EVENTS):
            event = orjson.loads(raw)
            sequence = int(raw_key.decode().split("/")[0])
            envelope = orjson.loads(store.get(JOURNAL, seq20(sequence).encode()))["envelope"]
            audit = event["audit"]
            assert audit["actor_id"] == envelope["actor_id"]
            assert audit["admitted_at_ms"] == envelope["admitted_at_ms"]
            assert audit["payload_digest"] == hashlib.sha256(
                PAYLOAD_DOMAIN.encode() + rfc8785.dumps(envelope["payload"])).hexdigest()
            kind, _, subject = audit["target"].partition("/")
            assert kind and subject and audit["target"] != "ledger/ledger", event
            reason = event.get("reason")
            assert audit["reason"] == (reason if isinstance(reason, str) else envelope["command_type"])
            assert audit["reason"] in registered_types() or isinstance(reason, str)
            seen[event["type"]] += 1
    assert {"Posted", "PaymentStateChanged", "CorrectionRecorded", "CorrectionRequested", "BudgetRefunded",
            "RecipientUpdated", "PayoutRunEnded"} <= set(seen)


def test_material_records_carry_a_correlation_id_and_their_provenance(demo_ledger):
    with RocksStore(demo_ledger.data, read_only=True) as store:
        found = Counter()
        for prefix in MATERIAL:
            for raw_key, raw in store.scan(STATE, prefix.encode()):
                record = orjson.loads(raw)
                data = record["data"]
                assert record["v"] == 1
                assert data["correlation_id"], raw_key
                created = data["created"]
                journal = orjson.loads(store.get(JOURNAL, seq20(created["sequence"]).encode()))
                assert (journal["envelope"]["command_id"], journal["envelope"]["admitted_at_ms"]) == (
                    created["command_id"], created["at_ms"]), raw_key
                found[prefix] += 1
    assert set(found) == set(MATERIAL), found
