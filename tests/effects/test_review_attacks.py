"""A backup repository that lies: tags that do not describe the snapshot, paths that leave the scratch directory."""

from __future__ import annotations

import pytest

from ledger_engine.checkpoint.offsite import (
    BACKUP_TAG, CREATED_TAG, SEQUENCE_TAG, VERIFIED_TAG, ResticRepository, recover,
)
from ledger_engine.checkpoint.verify import VerificationError
from ledger_engine.errors import ErrorCode, LedgerError
from porto_console.effects.backups import newest_good_backup, take_backup
from porto_console.effects.config import EffectsConfig


def test_a_verified_tag_on_a_snapshot_without_porto_tags_neither_breaks_status_nor_recovery(
        owner, admission, repository, backup_settings, tmp_path):
    taken = take_backup(owner, admission, repository)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not a ledger")
    repository.run("backup", "--tag", VERIFIED_TAG, str(foreign))
    newest = newest_good_backup(repository, fresh=True)
    assert (newest["snapshot"], newest["sequence"]) == (taken["snapshot"], 0)
    report = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", repository=repository)
    assert (report["snapshot"], report["sequence"]) == (taken["snapshot"], 0)


def test_a_snapshot_retagged_as_newer_than_what_it_holds_is_not_restored(
        owner, envelopes, admission, repository, backup_settings, tmp_path):
    first = take_backup(owner, admission, repository)
    owner.submit(envelopes.account("fin-1", roles=["finance"]))
    second = take_backup(owner, admission, repository)
    old = next(s for s in repository.snapshots(VERIFIED_TAG) if s.get("original", s["id"]).startswith(first["snapshot"]))
    repository.run("tag", "--set", ",".join([BACKUP_TAG, VERIFIED_TAG, f"{SEQUENCE_TAG}1",
                                             f"{CREATED_TAG}{second['created_at_ms'] + 1}"]), old["id"])
    with pytest.raises(VerificationError) as refused:
        recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", repository=repository)
    assert refused.value.code == ErrorCode.VERIFICATION_FAILED
    assert not (tmp_path / "new" / "ledger").exists()


class PathRepository(ResticRepository):
    """A repository whose restore writes nothing: only the snapshot's stated path is under test."""

    def run(self, *arguments: str, lock: bool = True) -> str:
        return ""


def test_a_snapshot_path_that_leaves_the_scratch_directory_is_refused(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    lying = PathRepository(str(tmp_path / "repository"), "porto-test-backup-password")
    with pytest.raises(VerificationError) as refused:
        lying.restore_snapshot({"id": "0" * 64, "paths": ["/../../elsewhere"]}, scratch)
    assert refused.value.code == ErrorCode.VERIFICATION_FAILED


class EmptyRepository(ResticRepository):
    """A reachable repository holding no snapshot."""

    def run(self, *arguments: str, lock: bool = True) -> str:
        return "[]" if arguments[0] == "snapshots" else ""


def test_a_password_in_the_repository_url_is_masked_where_the_repository_is_named(tmp_path, backup_settings):
    repository = EmptyRepository("rest:https://porto:s3cret-pass@backups.example:8000/porto", "porto-test-password")
    with pytest.raises(LedgerError) as refused:
        recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", repository=repository)
    assert refused.value.code == ErrorCode.NO_GOOD_BACKUP
    assert "rest:https://porto:***@backups.example:8000/porto" in refused.value.detail
    assert "s3cret-pass" not in refused.value.detail
    assert repository.name == "rest:https://porto:***@backups.example:8000/porto"
    assert ResticRepository("sftp:porto@host:/srv/porto", "x").name == "sftp:porto@host:/srv/porto"


def test_no_secret_of_the_workers_or_the_backup_repository_is_in_their_repr():
    config = EffectsConfig.from_env({
        "PORTO_SIGNER_KEY": "11" * 32, "PORTO_COMMITTER_KEY": "22" * 32, "PORTO_WORKER_TOKEN": "worker-token-secret",
        "PORTO_SIGNER_JOURNAL_URL": "postgresql://signer:journal-secret@db.example/porto"})
    shown = repr(config) + repr(ResticRepository("sftp:porto@host:/srv/porto", "repository-secret"))
    for secret in ("11" * 32, "22" * 32, "worker-token-secret", "journal-secret", "repository-secret"):
        assert secret not in shown
    assert config.worker_token == "worker-token-secret" and "internal_api_url" in shown


def test_manage_recover_never_falls_back_to_the_demo_password(settings, tmp_path):
    from porto_console.effects import recover as recovery
    settings.BACKUP_PASSWORD = None
    settings.LEDGER_DATA_DIR, settings.ADMISSION_DIR = tmp_path / "ledger", tmp_path / "admission"
    with pytest.raises(LedgerError) as refused:
        recovery.recover(last_known_sequence=None, wait_secs=1)
    assert refused.value.code == ErrorCode.MALFORMED_ENVELOPE and "RESTIC_PASSWORD" in refused.value.detail
    assert not (tmp_path / "ledger").exists() and not (tmp_path / "admission").exists()


def test_a_snapshot_dated_in_the_future_neither_stops_backups_nor_is_restored(
        owner, admission, repository, backup_settings, tmp_path):
    from porto_console.effects.backups import take_backup_if_due
    real = take_backup(owner, admission, repository)
    forged = take_backup(owner, admission, repository)
    snapshot = next(s for s in repository.snapshots(VERIFIED_TAG)
                    if s.get("original", s["id"]).startswith(forged["snapshot"]))
    a_year_ahead = forged["created_at_ms"] + 365 * 24 * 3600 * 1000
    repository.run("tag", "--set", ",".join([BACKUP_TAG, VERIFIED_TAG, f"{SEQUENCE_TAG}{forged['sequence']}",
                                             f"{CREATED_TAG}{a_year_ahead}"]), snapshot["id"])
    assert newest_good_backup(repository, fresh=True)["snapshot"] == real["snapshot"]
    backup_settings.BACKUP_INTERVAL_SECS = 0  # any real backup is due now
    assert take_backup_if_due(owner, admission, repository)["taken"] is True
    report = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", repository=repository)
    assert report["snapshot"] != forged["snapshot"]
