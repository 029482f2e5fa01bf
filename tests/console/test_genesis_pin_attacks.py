"""Attacks on the trusted genesis pin (ADR 0075) by whoever can write the data directory.

Each test here failed on the code it was first written against: while ``PORTO_GENESIS_HASH`` named the
genesis the deployment trusts, the console served a ledger from another genesis that called itself the demo.
"""

from __future__ import annotations

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo import DEMO_LABEL, demo_genesis
from ledger_engine.genesis import default_genesis, genesis_hash
from porto_console.console import safety
from tests.conftest import EnvelopeFactory
from tests.support import cli
from tests.support.deployment_keys import keys_of_its_own

REAL = default_genesis()
TRUSTED = genesis_hash(REAL)
# The real genesis with one more finance actor, as in test_trusted_genesis.py, and the demo's label.
FORGED_DEMO = {**REAL, "label": DEMO_LABEL,
               "actors": [*REAL["actors"], {"actor_id": "mallory", "roles": ["finance"]}]}


@pytest.fixture
def production(settings):
    """A deployment configured as it should be: its own keys, and the real genesis pinned."""
    keys_of_its_own(settings)
    settings.GENESIS_HASH = TRUSTED
    settings.BACKUP_PASSWORD, settings.DEBUG = "a-backup-password-of-its-own", False
    return settings


def test_a_forged_data_directory_labelled_as_the_demo_is_refused_for_its_genesis(production, tmp_path):
    """Whoever writes the data directory writes a ledger from another genesis (one more finance actor) and gives
    that genesis the demo's label: the console's safety check sees "the labelled demo" and never compares the
    genesis with PORTO_GENESIS_HASH, though the engine's own ``verify --genesis-hash`` refuses the very same
    directory."""
    with LedgerOwner.open(tmp_path / "ledger", genesis=FORGED_DEMO) as owner:
        assert owner.submit(EnvelopeFactory().account("alice", kind="worker", roles=["ingest"])).accepted
    run = cli.porto_ledger("--genesis-hash", TRUSTED, "verify", data=tmp_path / "ledger")
    assert (run.status, run.last["code"]) == (1, "VERIFICATION_FAILED")  # the engine refuses it

    with LedgerOwner.open(tmp_path / "ledger") as ledger:
        assert genesis_hash(ledger.genesis()) != TRUSTED
        with pytest.raises(safety.UnsafeConfiguration, match="not the genesis this deployment trusts"):
            safety.prepare(ledger)  # the console would serve it


def test_a_demo_ledger_in_an_emptied_data_directory_is_refused_for_its_genesis(production, tmp_path):
    """The launcher (scripts/run_console.py, which systemd, supervisord and ``manage.py recover`` run) opens
    the ledger with the demo genesis, so an absent or emptied data directory is initialised as the demo, and
    the safety check then skips the pin: a production host pinned to its real genesis serves a fresh demo
    ledger (demo scenario, demo users, the demo's fixture step-up key when none is set)."""
    with LedgerOwner.open(tmp_path / "ledger", genesis=demo_genesis()) as ledger:  # what launcher.launch does
        assert genesis_hash(ledger.genesis()) != TRUSTED
        with pytest.raises(safety.UnsafeConfiguration, match="not the genesis this deployment trusts"):
            safety.prepare(ledger)
