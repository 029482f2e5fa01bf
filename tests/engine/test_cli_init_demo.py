"""``porto-ledger init --demo``: the labelled demo's ledger as ``make run`` loads it, from the command line.

The scenario is deterministic, so two demo ledgers of one seed are the same ledger: head, entry hash and state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.demo import demo_scenario
from tests.support.cli import head, init, porto_ledger, succeeded

SEED = 3


def init_demo_ledger(data: Path, seed: int = SEED) -> dict[str, Any]:
    return succeeded(porto_ledger("init", "--demo", "--seed", seed, data=data)).last


def assert_same_demo_ledger(first: Path, second: Path) -> None:
    """The same head: sequence, entry hash and logical state hash."""
    assert head(first) == head(second)


# Each journals the whole demo (about two thousand commands) through the command line: long end-to-end tests
# (docs/adr/0100). The refusals below change nothing and stay in every tier.
@pytest.mark.slow
def test_init_demo_journals_the_scenario_with_the_evidence_beside_it(tmp_path):
    data = tmp_path / "ledger"
    made = init_demo_ledger(data)
    scenario = demo_scenario(SEED)
    assert made["sequence"] == made["demo_commands"] == head(data)["sequence"] == len(scenario.envelopes)
    evidence = EvidenceStore(tmp_path / "admission" / "evidence")
    assert all(digest in evidence for digest in scenario.evidence)
    # verify holds the statement indexes to the evidence beside the ledger
    assert succeeded(porto_ledger("verify", data=data)).last["ok"] is True


@pytest.mark.slow
def test_two_demo_ledgers_of_one_seed_are_the_same_ledger(tmp_path):
    init_demo_ledger(tmp_path / "first" / "ledger")
    init_demo_ledger(tmp_path / "second" / "ledger")
    assert_same_demo_ledger(tmp_path / "first" / "ledger", tmp_path / "second" / "ledger")


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
