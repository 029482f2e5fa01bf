"""History from outside the ledger (an export, a backup, a staged backup, a data directory) must start from
the genesis the deployment trusts, when it names one (``--genesis-hash``, ``PORTO_GENESIS_HASH``).

The forgery: the real genesis with one more finance actor, and the same commands after it. Every hash in it
is recomputed from its own genesis, so it verifies on its own terms, and its journal entries, head and journal
tree root are the real ledger's: the chain starts from 32 zero bytes (docs/spec/engine-and-journal.md §7),
not from the genesis.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.backup import backup_owner
from ledger_engine.checkpoint.export import METADATA_FILE, export_store
from ledger_engine.checkpoint.offsite import stage_backup
from ledger_engine.genesis import default_genesis, genesis_hash
from tests.conftest import EnvelopeFactory
from tests.support import cli

REAL = default_genesis()
FORGED = {**REAL, "actors": [*REAL["actors"], {"actor_id": "mallory", "roles": ["finance"]}]}
TRUSTED = genesis_hash(REAL)


@pytest.fixture(scope="module")
def histories(tmp_path_factory) -> dict[str, Path]:
    """For the real and the forged genesis: the ledger, its export, its backup and a staged backup."""
    root = tmp_path_factory.mktemp("genesis")
    made, envelopes = {}, EnvelopeFactory()
    commands = [envelopes.account(account, kind="worker", roles=["ingest"]) for account in ("alice", "bob")]
    for name, genesis in (("real", REAL), ("forged", FORGED)):
        with LedgerOwner.open(root / name / "ledger", genesis=genesis) as owner:
            for command in commands:
                assert owner.submit(command).accepted
            CommandGateway(owner, root / name / "admission").evidence.put(b"evidence bytes")
            stage_backup(owner.checkpoint, owner.store.path, root / name / "admission",
                         root / name / "staged" / "0001")
            backup_owner(owner, root / name / "backup")
            owner.with_checkpoint(lambda store: export_store(store, root / name / "export"))
        made[name] = root / name
    return made


def refused_for_its_genesis(run: cli.CliRun) -> None:
    assert run.status == 1, run.lines
    assert run.last["code"] == "VERIFICATION_FAILED"
    assert f"not from the genesis this deployment trusts ({TRUSTED})" in run.last["reason"]


def test_the_forgery_has_the_real_journal_and_only_the_genesis_hash_tells_it_apart(histories):
    real, forged = (cli.succeeded(cli.porto_ledger("verify-export", histories[name] / "export")).last
                    for name in ("real", "forged"))
    assert (forged["sequence"], forged["last_entry_hash"]) == (real["sequence"], real["last_entry_hash"])
    assert (real["genesis_hash"], forged["genesis_hash"]) == (TRUSTED, genesis_hash(FORGED))
    metadata = [orjson.loads((histories[name] / "export" / METADATA_FILE).read_bytes())
                for name in ("real", "forged")]
    assert metadata[0]["journal_tree"] == metadata[1]["journal_tree"]


def test_verify_export_and_verify_refuse_another_genesis(histories):
    forged = histories["forged"]
    refused_for_its_genesis(cli.porto_ledger("verify-export", forged / "export", "--genesis-hash", TRUSTED))
    refused_for_its_genesis(cli.porto_ledger("--genesis-hash", TRUSTED, "verify", data=forged / "ledger"))
    real = histories["real"]
    cli.succeeded(cli.porto_ledger("verify-export", real / "export", "--genesis-hash", TRUSTED))
    cli.succeeded(cli.porto_ledger("verify", "--genesis-hash", TRUSTED, data=real / "ledger"))


def test_the_trusted_genesis_may_come_from_the_environment(histories):
    run = cli.porto_ledger("verify-export", histories["forged"] / "export", env={"PORTO_GENESIS_HASH": TRUSTED})
    refused_for_its_genesis(run)


def test_replay_and_restore_of_another_genesis_build_nothing(histories, tmp_path):
    forged = histories["forged"]
    refused_for_its_genesis(cli.porto_ledger("replay", forged / "export", "--genesis-hash", TRUSTED,
                                             data=tmp_path / "replayed"))
    refused_for_its_genesis(cli.porto_ledger("restore", forged / "backup", "--genesis-hash", TRUSTED,
                                             data=tmp_path / "restored"))
    assert not (tmp_path / "replayed").exists() and not (tmp_path / "restored").exists()
    restored = cli.succeeded(cli.porto_ledger("restore", histories["real"] / "backup", "--genesis-hash", TRUSTED,
                                              data=tmp_path / "restored")).last
    assert restored["genesis_hash"] == TRUSTED


def test_recover_passes_over_a_newer_backup_from_another_genesis(histories, tmp_path):
    staged = tmp_path / "staged"
    staged.mkdir()
    (staged / "0001").symlink_to(histories["real"] / "staged" / "0001")
    (staged / "0002").symlink_to(histories["forged"] / "staged" / "0001")
    only_forged = tmp_path / "only-forged"
    only_forged.mkdir()
    (only_forged / "0001").symlink_to(histories["forged"] / "staged" / "0001")

    run = cli.porto_ledger("recover", "--admission", tmp_path / "none-admission", "--backup-dir", only_forged,
                           "--genesis-hash", TRUSTED, data=tmp_path / "none")
    assert (run.status, run.last["code"]) == (4, "NO_GOOD_BACKUP")
    assert not (tmp_path / "none").exists()
    cli.succeeded(cli.porto_ledger("recover", "--admission", tmp_path / "new-admission", "--backup-dir", staged,
                                   "--genesis-hash", TRUSTED, data=tmp_path / "new"))
    assert cli.head(tmp_path / "new")["genesis_hash"] == TRUSTED


@pytest.mark.parametrize("spelling", ["ABC", "g" * 64, TRUSTED.upper()])
def test_a_malformed_trusted_genesis_is_bad_input(histories, spelling):
    run = cli.porto_ledger("verify-export", histories["real"] / "export", "--genesis-hash", spelling)
    assert (run.status, run.last["code"]) == (2, "MALFORMED_ENVELOPE")
