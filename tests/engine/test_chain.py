"""The journal chain and state digest, recomputed from docs/spec/engine-and-journal.md §7 and §9 and compared with storage."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import rfc8785

from ledger_engine.storage.digest import logical_state_hash
from ledger_engine.checkpoint.export import JOURNAL_FILE, METADATA_FILE, ROWS_FILE
from tests.support import cli, payloads, seed000
from tests.support.store import changed_keys, owner_dump

INGEST = "ingest-1"
ARTIST = "artist-1"
# docs/spec/engine-and-journal.md §8 asks only that the genesis hash be kept; this domain prefix is the engine's own choice.
GENESIS_PREFIX = b"porto:london:genesis:v1\n"


def scenario(envelopes) -> list[dict[str, Any]]:
    """Accounts, a catalogue, rights, funding, a rejection, an update and a duplicate."""
    fin = envelopes.account("fin-1", roles=["finance"])
    funding = payloads.funding("lot-1", "2500000")
    return [
        fin,
        envelopes.account(INGEST, "worker", ["ingest"]),
        envelopes.account(ARTIST, "artist", payout_address=payloads.address(ARTIST)),
        envelopes("ImportCatalogue", payloads.catalogue("import-1", payloads.work("w-1")), actor=INGEST),
        envelopes("ActivateWork", payloads.rights("w-1", {ARTIST: 10_000}), actor=INGEST),
        envelopes("ImportFunding", funding, actor=INGEST, evidence=[payloads.deposit_evidence(funding)]),
        envelopes.account("fin-2", roles=["finance"]) | {"actor_id": "fin-1"},
        envelopes("RegisterAccount", {**fin["payload"], "roles": ["auditor", "finance"]},
                  expected=[{"cf": "state", "key": "account/fin-1", "revision": 1}]),
        fin,
    ]


def test_every_entry_and_delta_follows_seed_000(owner, envelopes):
    previous_hash = seed000.GENESIS_PREVIOUS_HASH
    outcomes = []
    for envelope in scenario(envelopes):
        before = owner_dump(owner)
        outcome = owner.submit(envelope)
        after = owner_dump(owner)
        outcomes.append((outcome.outcome, outcome.code))
        if outcome.duplicate:
            assert after == before
            continue
        entry = owner.journal_entry(outcome.sequence)
        assert entry["previous_entry_hash"] == previous_hash
        assert entry["envelope"] == envelope
        assert entry["delta_hash"] == seed000.delta_hash(seed000.delta_rows(before, after))
        # The ledger keeps exactly that delta for exports.
        assert after["deltas"][b"%020d" % outcome.sequence] == rfc8785.dumps(seed000.delta_rows(before, after))
        assert entry["entry_hash"] == seed000.entry_hash(entry) == outcome.entry_hash
        stored_result = orjson.loads(after["command_result"][envelope["command_id"].encode()])
        assert stored_result["envelope_hash"] == seed000.envelope_hash(envelope)
        assert {family for family, _ in changed_keys(before, after)} - set(seed000.DELTA_FAMILIES) <= {
            "journal", "deltas", "meta", "indexes"}
        assert_values_are_canonical(before, after)
        previous_hash = entry["entry_hash"]
    assert outcomes == [("accepted", "OK")] * 6 + [("rejected", "CAPABILITY_MISSING")] + [("accepted", "OK")] * 2
    assert owner.head().entry_hash == previous_hash
    assert owner.at_boundary(logical_state_hash) == seed000.logical_state_hash(owner_dump(owner))


def assert_values_are_canonical(before, after) -> None:
    for family, key in changed_keys(before, after):
        raw = after[family].get(key.encode())
        if raw is not None and family != "indexes":
            assert raw == rfc8785.dumps(orjson.loads(raw)), (family, key)


def test_genesis_is_sequence_zero_with_the_zero_head(owner):
    assert (owner.head().sequence, owner.head().entry_hash) == (0, seed000.GENESIS_PREVIOUS_HASH)
    dump = owner_dump(owner)
    assert dump["journal"] == {} and dump["events"] == {} and dump["command_result"] == {}
    genesis = owner.genesis()
    stored = orjson.loads(dump["meta"][b"genesis"])
    assert stored["genesis_hash"] == seed000.prefixed_hash(GENESIS_PREFIX, genesis)
    assert {key.decode(): orjson.loads(raw) for key, raw in dump["state"].items()} == {
        "actor/genesis-admin": {"v": 1, "revision": 1, "data": {"roles": ["admin"], "status": "active"}},
        "ruleset/london-1": {"v": 1, "revision": 1, "data": {
            "ruleset_version": genesis["ruleset_version"], "label": genesis["label"],
            "assets": genesis["assets"], "allocation_policy": genesis["allocation_policy"]}},
        "step_up_verifier": {"v": 1, "revision": 1, "data": {"public_key": genesis["step_up_verifier"]["public_key"]}},
    }


@pytest.fixture(scope="module")
def demo_export(demo_ledger, tmp_path_factory):
    destination = tmp_path_factory.mktemp("chain") / "export"
    cli.export(demo_ledger.data, destination)
    return destination


def test_the_demo_export_chain_recomputes_from_seed_000(demo_ledger, demo_export):
    entries = [orjson.loads(line) for line in (demo_export / JOURNAL_FILE).read_bytes().splitlines()]
    previous_hash = seed000.GENESIS_PREVIOUS_HASH
    for number, entry in enumerate(entries, start=1):
        assert (entry["sequence"], entry["previous_entry_hash"]) == (number, previous_hash)
        assert entry["entry_hash"] == seed000.entry_hash(entry)
        previous_hash = entry["entry_hash"]
    assert [entry["entry_hash"] for entry in entries] == [
        outcome["entry_hash"] for outcome in demo_ledger.outcomes if not outcome["duplicate"]]
    assert (len(entries), previous_hash) == (demo_ledger.head["sequence"], demo_ledger.head["entry_hash"])


def test_the_demo_state_digest_recomputes_from_seed_000(demo_ledger, demo_export):
    rows = [orjson.loads(line) for line in (demo_export / ROWS_FILE).read_bytes().splitlines()]
    assert [(row["column_family"].encode(), row["key"].encode()) for row in rows] == sorted(
        (row["column_family"].encode(), row["key"].encode()) for row in rows)
    assert rows and {row["column_family"] for row in rows} <= set(seed000.STATE_FAMILIES)
    digest = seed000.prefixed_hash(seed000.STATE_PREFIX, rows)
    metadata = orjson.loads((demo_export / METADATA_FILE).read_bytes())
    assert digest == metadata["logical_state_hash"] == demo_ledger.head["logical_state_hash"]


def test_the_demo_export_deltas_fold_by_seed_000_into_its_state_and_events(demo_ledger, demo_export):
    """An auditor's check written from the seed alone: every delta hash, and the fold of the deltas."""
    folded = seed000.audit_export(demo_export)
    assert folded.sequence == demo_ledger.head["sequence"]
    assert folded.logical_state_hash == demo_ledger.head["logical_state_hash"]
    assert folded.events > 0 and folded.rows > 0
