"""A restore re-executes the backed-up history: whole hashes are not proof that the rules made it.

The forgery: a ledger from the trusted genesis whose third command says "register mallory as an
ingest worker" but whose delta also makes mallory finance, written by a rule that is not the
product's. Every hash in it is computed honestly from what was written, so its backup, staged
backup and export verify by hash, chain, ties and fold, from the genesis the deployment trusts.
Only running the product's rules again tells it apart.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import orjson

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint import backup as backup_module
from ledger_engine.checkpoint.backup import backup_owner
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.export import JOURNAL_FILE
from ledger_engine.checkpoint.offsite import stage_backup
from ledger_engine.checkpoint.verify import VerificationError
from ledger_engine.domain import registry
from ledger_engine.domain.commands.accounts import put_account
from ledger_engine.domain.schema.staff import account_key
from ledger_engine.genesis import default_genesis, genesis_hash
from ledger_engine.layout import STATE
from tests.conftest import EnvelopeFactory
from tests.support import cli

TRUSTED = genesis_hash(default_genesis())
FORGED_LINE = 3  # alice, bob, then mallory


def _granting_finance_to_mallory(real_rule):
    def forged(ctx, payload):
        result = real_rule(ctx, payload)
        if payload.account_id == "mallory":
            account = ctx.changes.get(STATE, account_key("mallory")).data
            put_account(ctx.changes, {name: account[name] for name in ("account_id", "kind", "identity_digest",
                                                                      "created_at_ms")},
                        roles=["finance", "ingest"], status="active", now_ms=ctx.now_ms)
        return result
    return forged


@pytest.fixture(scope="module")
def forged(tmp_path_factory) -> Path:
    """The forged ledger's backup, staged backup (with an empty admission store) and export."""
    root = tmp_path_factory.mktemp("forged")
    envelopes = EnvelopeFactory()
    honest = registry._REGISTRY["RegisterAccount"]
    with LedgerOwner.open(root / "ledger", genesis=default_genesis()) as owner:
        for account in ("alice", "bob", "mallory", "carol"):
            registry._REGISTRY["RegisterAccount"] = dataclasses.replace(
                honest, rule=_granting_finance_to_mallory(honest.rule))
            try:
                assert owner.submit(envelopes.account(account, kind="worker", roles=["ingest"])).accepted
            finally:
                registry._REGISTRY["RegisterAccount"] = honest
        assert owner.get(STATE, account_key("mallory")).data["roles"] == ["finance", "ingest"]
        backup_owner(owner, root / "backup")
        stage_backup(owner.checkpoint, owner.store.path, root / "admission", root / "staged" / "0001")
        owner.with_checkpoint(lambda store: export_store(store, root / "export"))
    return root


def test_the_forgery_verifies_by_every_hash_from_the_trusted_genesis(forged):
    verified = cli.succeeded(cli.porto_ledger("verify-export", forged / "export", "--genesis-hash", TRUSTED)).last
    assert (verified["sequence"], verified["genesis_hash"]) == (4, TRUSTED)
    cli.succeeded(cli.porto_ledger("--genesis-hash", TRUSTED, "verify", data=forged / "ledger"))


def refused_at_the_forged_line(run: cli.CliRun) -> None:
    assert (run.status, run.last["code"]) == (1, "VERIFICATION_FAILED"), run.lines
    assert run.last["item"] == f"journal.jsonl:{FORGED_LINE}"
    assert "replayed entry differs" in run.last["reason"]


def test_restore_refuses_a_history_its_rules_did_not_make_and_leaves_nothing(forged, tmp_path):
    refused_at_the_forged_line(cli.porto_ledger("restore", forged / "backup", "--genesis-hash", TRUSTED,
                                                data=tmp_path / "restored"))
    assert not (tmp_path / "restored").exists()
    assert list(tmp_path.iterdir()) == [], "a refused restore leaves no staging or scratch ledger behind"


def test_recover_refuses_a_staged_backup_its_rules_did_not_make(forged, tmp_path):
    refused_at_the_forged_line(cli.porto_ledger("recover", "--admission", tmp_path / "admission",
                                                "--backup-dir", forged / "staged", "--genesis-hash", TRUSTED,
                                                data=tmp_path / "recovered"))
    assert not (tmp_path / "recovered").exists() and not (tmp_path / "admission").exists()
    assert [path.name for path in tmp_path.iterdir()] == []


def test_replay_refuses_it_at_the_same_line(forged, tmp_path):
    refused_at_the_forged_line(cli.porto_ledger("replay", forged / "export", "--genesis-hash", TRUSTED,
                                                data=tmp_path / "replayed"))


def _honest_twin(forged: Path, root: Path) -> Path:
    """The export of the same envelopes under the product's rules: mallory an ingest worker only."""
    envelopes = [orjson.loads(line)["envelope"] for line in (forged / "export" / JOURNAL_FILE).read_bytes().splitlines()]
    with LedgerOwner.open(root / "ledger", genesis=default_genesis()) as owner:
        assert all(owner.submit(envelope).accepted for envelope in envelopes)
        owner.with_checkpoint(lambda store: export_store(store, root / "export"))
    return root / "export"


def test_a_backup_whose_export_is_swapped_for_an_honest_one_while_it_replays_is_refused(forged, tmp_path,
                                                                                        monkeypatch):
    """A writer who can change the backup during the restore shows the rules an honest history, then puts the
    forged one back: the ledger published is the one replayed, and it must export as the export first verified."""
    backup = tmp_path / "backup"
    shutil.copytree(forged / "backup", backup)
    honest = _honest_twin(forged, tmp_path / "twin")
    replaying = backup_module.rebuild_export

    def while_swapped(export_dir, staging, **options):
        os.rename(export_dir, tmp_path / "forged-export")
        shutil.copytree(honest, export_dir)
        try:
            return replaying(export_dir, staging, **options)
        finally:
            shutil.rmtree(export_dir)
            os.rename(tmp_path / "forged-export", export_dir)

    monkeypatch.setattr(backup_module, "rebuild_export", while_swapped)
    with pytest.raises(VerificationError) as refused:
        backup_module.restore(backup, tmp_path / "restored", trusted_genesis=TRUSTED)
    assert "does not match the backup manifest" in str(refused.value)
    assert not (tmp_path / "restored").exists()
