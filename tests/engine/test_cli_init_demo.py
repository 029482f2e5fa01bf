"""``porto-ledger init --demo``: the labelled demo's ledger as ``make run`` loads it, from the command line.

The scenario is deterministic; the day freeze that follows it is the owner's
day loop, whose commands carry fresh command IDs and admission times. So two
demo ledgers of one seed have the same head sequence, the scenario's journal
entries byte for byte, and the same state, except that the day lines and
chunks the freeze made are stamped with its own command IDs and times: their
logical state hashes differ for that reason alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.demo import demo_scenario
from ledger_engine.layout import COMMAND_RESULT, DIGEST_FAMILIES, JOURNAL
from ledger_engine.storage.rocks import RocksStore
from tests.support.cli import head, init, porto_ledger, succeeded

SEED = 3
# What a command stamps on the records it writes; the freeze's are fresh on every run.
COMMAND_STAMPS = ("at_ms", "command_id")


def init_demo_ledger(data: Path, seed: int = SEED) -> dict[str, Any]:
    return succeeded(porto_ledger("init", "--demo", "--seed", seed, data=data)).last


def ledger_rows(data: Path) -> dict[str, dict[bytes, bytes]]:
    with RocksStore(data, read_only=True, stopped=True) as store:
        return {family: dict(store.scan(family)) for family in (*DIGEST_FAMILIES, JOURNAL)}


def without_command_stamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: without_command_stamps(item) for key, item in value.items() if key not in COMMAND_STAMPS}
    if isinstance(value, list):
        return [without_command_stamps(item) for item in value]
    return value


def assert_same_demo_ledger(first: Path, second: Path, seed: int) -> None:
    """Everything the scenario and the freeze decide is equal; only the freeze's own command stamps may differ."""
    scenario_length = len(demo_scenario(seed).envelopes)
    ours, theirs = ledger_rows(first), ledger_rows(second)
    freeze_commands = len(ours[JOURNAL]) - scenario_length
    assert freeze_commands > 0 and ours[JOURNAL].keys() == theirs[JOURNAL].keys()
    assert [value for key, value in sorted(ours[JOURNAL].items()) if int(key) <= scenario_length] == \
        [value for key, value in sorted(theirs[JOURNAL].items()) if int(key) <= scenario_length]
    for family in DIGEST_FAMILIES:
        only_ours, only_theirs = ours[family].keys() - theirs[family].keys(), theirs[family].keys() - ours[family].keys()
        expected_apart = freeze_commands if family == COMMAND_RESULT else 0  # keyed by the freeze's command IDs
        assert (len(only_ours), len(only_theirs)) == (expected_apart, expected_apart), family
        for key in ours[family].keys() & theirs[family].keys():
            if ours[family][key] != theirs[family][key]:
                assert without_command_stamps(orjson.loads(ours[family][key])) == \
                    without_command_stamps(orjson.loads(theirs[family][key])), (family, key)


def test_init_demo_journals_the_scenario_and_freezes_its_day_with_the_evidence_beside_it(tmp_path):
    data = tmp_path / "ledger"
    made = init_demo_ledger(data)
    scenario = demo_scenario(SEED)
    assert made["sequence"] == made["demo_commands"] == head(data)["sequence"] > len(scenario.envelopes)
    evidence = EvidenceStore(tmp_path / "admission" / "evidence")
    assert all(digest in evidence for digest in scenario.evidence)
    # verify holds the frozen chunks and statement indexes to the evidence beside the ledger
    assert succeeded(porto_ledger("verify", data=data)).last["ok"] is True


def test_two_demo_ledgers_of_one_seed_differ_only_in_the_freezes_command_stamps(tmp_path):
    init_demo_ledger(tmp_path / "first" / "ledger")
    init_demo_ledger(tmp_path / "second" / "ledger")
    assert head(tmp_path / "first" / "ledger")["sequence"] == head(tmp_path / "second" / "ledger")["sequence"]
    assert_same_demo_ledger(tmp_path / "first" / "ledger", tmp_path / "second" / "ledger", SEED)


def test_init_demo_refuses_a_directory_that_is_not_empty_and_changes_nothing(tmp_path):
    data = tmp_path / "ledger"
    before = init(data)
    refused = porto_ledger("init", "--demo", data=data)
    assert refused.status == 2 and refused.last["code"] == "ALREADY_EXISTS"
    assert head(data)["sequence"] == before["sequence"] == 0
    assert not (tmp_path / "admission").exists()


def test_init_demo_refuses_a_genesis_of_another_ledger(tmp_path):
    genesis = tmp_path / "genesis.json"
    genesis.write_bytes(b"{}")
    refused = porto_ledger("init", "--demo", "--genesis", genesis, data=tmp_path / "ledger")
    assert refused.status == 2 and refused.last["code"] == "MALFORMED_ENVELOPE"
    assert not (tmp_path / "ledger").exists()
