"""The demo scenario: every streaming command accepted but the documented deliberate rejections,
real Ed25519 receipts, a replay in a fresh process to the same digest, and byte-identical rebuilt indexes."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from ledger_engine.adapters.signatures import RECEIPT, public_key_hex, sign
from ledger_engine.canonical import sha256_hex
from ledger_engine.demo.streaming import DELIBERATE_REJECTIONS, node_signing_key
from ledger_engine.domain.commands.streaming.holds import HoldReason
from ledger_engine.projections.rebuild import indexes_digest
from ledger_engine.storage.rocks import RocksStore
from tests.support import cli

SEED = 1
STREAMING_COMMANDS = {
    "ApplyBillingObservation", "DisableWork", "AdmitNode", "ChangeNodeStatus", "RotateNodeKey", "RecordNodeHealth",
    "OpenSession", "CloseSession", "IssueGrant", "ConsumeGrant", "RecordReceipt", "RecordPeerResult", "CloseDay",
    "DecideHold",
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("streaming-demo")
    lines = cli.demo_lines(SEED, listeners=20, days=3)
    stream = cli.write_stream(root / "demo.jsonl", lines)
    data = root / "ledger"
    cli.init_demo(data)
    outcomes = cli.submit(data, stream)
    envelopes = [orjson.loads(line) for line in lines]
    return {"root": root, "data": data, "envelopes": envelopes, "outcomes": outcomes, "head": cli.head(data)}


def test_every_streaming_command_is_accepted_except_the_deliberate_rejections(demo):
    pairs = [(e, o) for e, o in zip(demo["envelopes"], demo["outcomes"]) if e["command_type"] in STREAMING_COMMANDS]
    rejected = Counter((e["command_type"], o["code"]) for e, o in pairs if o["outcome"] != "accepted")
    assert rejected == Counter(DELIBERATE_REJECTIONS)
    assert {e["command_type"] for e, o in pairs if o["outcome"] == "accepted"} == STREAMING_COMMANDS


def test_the_demo_raises_holds_of_every_reason_and_decides_them_both_ways(demo):
    raised, decisions = Counter(), Counter()
    for envelope, outcome in zip(demo["envelopes"], demo["outcomes"]):
        if envelope["command_type"] == "RecordReceipt" and outcome["outcome"] == "accepted":
            raised.update(outcome["result"]["data"]["hold_reasons"])
        if envelope["command_type"] == "DecideHold" and outcome["outcome"] == "accepted":
            decisions[envelope["payload"]["decision"]] += 1
    assert set(raised) == {str(reason) for reason in HoldReason}
    assert all(count >= 2 for count in raised.values()), raised
    assert decisions["release"] and decisions["reject"]


def test_every_demo_receipt_is_an_ed25519_signature_by_a_registered_node_key(demo):
    with RocksStore(demo["data"], read_only=True) as store:
        nodes = {key.decode(): orjson.loads(value)["data"] for key, value in store.scan("state", b"node/")}
    receipts = [e["payload"] for e in demo["envelopes"] if e["command_type"] == "RecordReceipt"]
    assert receipts
    for payload in receipts:
        body = payload["receipt"]
        signed = sign(node_signing_key(body["node_id"], body["key_version"]), RECEIPT, body)
        assert sha256_hex(signed.evidence_bytes()) == payload["evidence_digest"]
        registered = nodes[f"node/{body['node_id']}"]["key_versions"][body["key_version"] - 1]
        assert registered["public_key"] == public_key_hex(node_signing_key(body["node_id"], body["key_version"]))
        assert signed.verified_by(registered["public_key"])


def test_the_demo_replays_to_the_same_digest_in_a_fresh_process(demo, tmp_path):
    export = cli.export(demo["data"], tmp_path / "export")
    replayed = cli.succeeded(cli.porto_ledger("replay", tmp_path / "export", data=tmp_path / "replayed",
                                              hash_seed=4242)).last
    assert (replayed["sequence"], replayed["entry_hash"], replayed["logical_state_hash"]) == (
        demo["head"]["sequence"], demo["head"]["entry_hash"], demo["head"]["logical_state_hash"])
    assert export["logical_state_hash"] == demo["head"]["logical_state_hash"]


def test_rebuilt_indexes_are_byte_identical_to_the_maintained_ones(demo, tmp_path):
    with RocksStore(demo["data"], read_only=True) as store:
        maintained = indexes_digest(store)
    rebuilt = cli.succeeded(cli.porto_ledger("rebuild-indexes", data=demo["data"])).last
    assert rebuilt == maintained
    assert maintained["entries"] > 0
