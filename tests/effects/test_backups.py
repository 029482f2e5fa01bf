"""Backups that count: the ledger and its admission stores in a restic repository, verified before they count."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger_engine.checkpoint.offsite import (
    BACKUP_TAG, CREATED_TAG, SEQUENCE_TAG, VERIFIED_TAG, ResticRepository, recover, stage_backup, verify_staged,
)
from ledger_engine.checkpoint.verify import VerificationError
from ledger_engine.errors import ErrorCode, LedgerError
from porto_console.effects.backups import STALE_AFTER_MS, newest_good_backup, take_backup, take_backup_if_due


def test_newest_good_backup_and_its_age(owner, envelopes, admission, repository, unused_location, backup_settings):
    assert newest_good_backup(unused_location, fresh=True) is None  # no repository there yet
    assert newest_good_backup(repository, fresh=True) is None  # initialised and empty
    first = take_backup(owner, admission, repository)
    owner.submit(envelopes.account("fin-1", roles=["finance"]))
    second = take_backup(owner, admission, repository)
    assert (first["sequence"], second["sequence"]) == (0, 1)
    newest = newest_good_backup(repository, now_ms=second["created_at_ms"] + 1_000, fresh=True)
    assert (newest["snapshot"], newest["sequence"], newest["age_ms"], newest["stale"]) == (
        second["snapshot"], 1, 1_000, False)
    assert newest_good_backup(repository, now_ms=second["created_at_ms"] + STALE_AFTER_MS + 1)["stale"] is True
    assert {VERIFIED_TAG, BACKUP_TAG, f"{SEQUENCE_TAG}1"} <= set(repository.snapshots(VERIFIED_TAG)[-1]["tags"])


def test_a_backup_is_taken_only_when_the_newest_good_one_is_older_than_the_interval(
        owner, envelopes, admission, repository, backup_settings):
    assert take_backup_if_due(owner, admission, repository)["taken"] is True  # none yet: the start's backup
    owner.submit(envelopes.account("fin-1", roles=["finance"]))
    assert take_backup_if_due(owner, admission, repository)["taken"] is False
    backup_settings.BACKUP_INTERVAL_SECS = 0  # the newest is now overdue: caught up at this look
    caught_up = take_backup_if_due(owner, admission, repository)
    assert (caught_up["taken"], caught_up["sequence"]) == (True, 1)
    assert len(repository.snapshots(VERIFIED_TAG)) == 2


def test_a_look_while_another_backup_is_being_taken_answers_with_the_newest_good_one_at_once(
        owner, admission, repository, backup_settings):
    import threading

    from porto_console.effects import backups

    first = take_backup_if_due(owner, admission, repository)
    backup_settings.BACKUP_INTERVAL_SECS = 0  # overdue: a look would take one, but the keeper is taking one now
    taking, done = threading.Event(), threading.Event()

    def keeper_taking_one():
        with backups._taking:
            taking.set()
            done.wait(30)

    keeper = threading.Thread(target=keeper_taking_one)
    keeper.start()
    taking.wait(30)
    try:
        answered = take_backup_if_due(owner, admission, repository)
    finally:
        done.set()
        keeper.join()
    assert (answered["taken"], answered["snapshot"]) == (False, first["snapshot"])
    assert len(repository.snapshots(VERIFIED_TAG)) == 1


def test_an_uploaded_snapshot_that_never_verified_does_not_count(owner, admission, repository, tmp_path):
    stage = tmp_path / "stage"
    summary = stage_backup(owner.checkpoint, owner.store.path, admission, stage)
    repository.ensure_initialised()
    repository.upload(stage, [BACKUP_TAG, f"{SEQUENCE_TAG}0", f"{CREATED_TAG}{summary['created_at_ms']}"])
    assert newest_good_backup(repository, fresh=True) is None
    with pytest.raises(LedgerError) as refused:
        recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", repository=repository)
    assert refused.value.code == ErrorCode.NO_GOOD_BACKUP


def test_a_staged_backup_holds_the_evidence_and_a_changed_file_fails_verification(owner, admission, tmp_path):
    stage = tmp_path / "stage"
    summary = stage_backup(owner.checkpoint, owner.store.path, admission, stage)
    assert (summary["admission_files"], summary["evidence_missing"]) == (1, [])
    evidence = next((stage / "admission" / "evidence").rglob("*/*"))
    evidence.write_bytes(b"chain said: failed")
    with pytest.raises(VerificationError):
        verify_staged(stage)


def test_a_wrong_password_cannot_read_the_repository(owner, admission, repository, backup_settings):
    take_backup(owner, admission, repository)
    with pytest.raises(LedgerError) as refused:
        ResticRepository(repository.location, "not-the-password").snapshots(VERIFIED_TAG)
    assert refused.value.code == ErrorCode.BACKUP_REPOSITORY_FAILED


def test_recover_restores_the_ledger_and_its_evidence_with_dispatch_disabled(
        owner, envelopes, admission, repository, backup_settings, tmp_path):
    owner.submit(envelopes.account("fin-1", roles=["finance"]))
    taken = take_backup(owner, admission, repository)
    report = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", repository=repository)
    assert (report["snapshot"], report["sequence"], report["dispatch_enabled"]) == (taken["snapshot"], 1, False)
    assert (tmp_path / "new" / "admission" / "evidence").is_dir() and report["evidence_missing"] == []
    with pytest.raises(VerificationError):  # never over a ledger that is there
        recover(tmp_path / "new" / "ledger", tmp_path / "other", repository=repository)


def test_a_location_where_nothing_is_yet_is_initialised_once(unused_location):
    """What the first backup into a new location does first (``upload_and_verify``); over SFTP, the host-loss
    drill's console does it (``tests/effects/test_host_loss.py``)."""
    assert not unused_location.initialised()
    unused_location.ensure_initialised()
    config = (Path(unused_location.location) / "config").read_bytes()
    unused_location.ensure_initialised()
    assert unused_location.initialised() and (Path(unused_location.location) / "config").read_bytes() == config


def test_a_backup_over_sftp_is_encrypted_and_restores(owner, admission, ssh_server, backup_settings, tmp_path,
                                                      initialised_repository):
    remote = tmp_path / "remote-repository"
    initialised_repository(remote, "porto-test-backup-password")
    repository = ResticRepository(ssh_server.repository(remote), "porto-test-backup-password",
                                  sftp_command=ssh_server.sftp_command)
    taken = take_backup(owner, admission, repository)
    assert (remote / "config").is_file()
    stored = b"".join(path.read_bytes() for path in remote.rglob("*") if path.is_file())
    assert b"chain said: confirmed" not in stored and b"logical_state_hash" not in stored  # encrypted at rest
    report = recover(tmp_path / "new" / "ledger", tmp_path / "new" / "admission", repository=repository)
    assert (report["snapshot"], report["sequence"]) == (taken["snapshot"], 0)
