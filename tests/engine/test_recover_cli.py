"""`porto-ledger recover`: the newest good backup and its evidence into empty directories, dispatch paused."""

from __future__ import annotations

from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.offsite import stage_backup, upload_and_verify
from ledger_engine.genesis import default_genesis
from tests.support.cli import porto_ledger, succeeded

PASSWORD = "porto-test-only-backup-password"


def staged(tmp_path, name: str) -> dict:
    """A staged backup of a small live ledger with one piece of stored evidence."""
    with LedgerOwner.open(tmp_path / "live", genesis=default_genesis()) as owner:
        CommandGateway(owner, tmp_path / "admission").evidence.put(b"evidence bytes")
        return stage_backup(owner.checkpoint, owner.store.path, tmp_path / "admission", tmp_path / "staged" / name)


def test_recover_from_a_repository_reports_what_came_back_and_what_was_lost(tmp_path, initialised_repository):
    summary = staged(tmp_path, "0001")
    repository = initialised_repository(tmp_path / "repository", PASSWORD)
    taken = upload_and_verify(repository, tmp_path / "staged" / "0001", summary)
    (tmp_path / "password").write_text(PASSWORD + "\n")
    report = succeeded(porto_ledger("recover", "--admission", tmp_path / "new-admission", "--repository",
                                    repository.location, "--password-file", tmp_path / "password",
                                    "--last-sequence", "12", data=tmp_path / "new-ledger")).lines[-1]
    assert (report["snapshot"], report["sequence"], report["commands_lost"]) == (taken["snapshot"], 0, 12)
    assert (report["dispatch_enabled"], report["payments_in_flight"], report["evidence_missing_count"]) == (False, 0, 0)
    assert len(list((tmp_path / "new-admission" / "evidence").rglob("*/*"))) == 1
    with LedgerOwner.open(tmp_path / "new-ledger") as owner:
        assert owner.dispatch_state()["enabled"] is False


def test_recover_from_a_backup_directory_skips_a_damaged_newest(tmp_path):
    staged(tmp_path, "0001")
    staged(tmp_path, "0002")
    (tmp_path / "staged" / "0002" / "ADMISSION.json").write_bytes(b"{")
    report = succeeded(porto_ledger("recover", "--admission", tmp_path / "new-admission", "--backup-dir",
                                    tmp_path / "staged", data=tmp_path / "new-ledger")).lines[-1]
    assert report["snapshot"] is None and report["commands_lost"] is None


def test_recover_refuses_without_a_good_backup_or_with_a_wrong_password(tmp_path, initialised_repository):
    (tmp_path / "staged").mkdir()
    none = porto_ledger("recover", "--admission", tmp_path / "a", "--backup-dir", tmp_path / "staged",
                        data=tmp_path / "l")
    assert (none.status, none.lines[-1]["code"]) == (4, "NO_GOOD_BACKUP")
    summary = staged(tmp_path, "0001")
    upload_and_verify(initialised_repository(tmp_path / "repository", PASSWORD), tmp_path / "staged" / "0001", summary)
    wrong = porto_ledger("recover", "--admission", tmp_path / "a", "--repository", tmp_path / "repository",
                         data=tmp_path / "l", env={"RESTIC_PASSWORD": "not-it"})
    assert (wrong.status, wrong.lines[-1]["code"]) == (4, "BACKUP_REPOSITORY_FAILED")
    assert not (tmp_path / "l").exists() and not (tmp_path / "a").exists()
    both = porto_ledger("recover", "--admission", tmp_path / "a", data=tmp_path / "l")
    assert (both.status, both.lines[-1]["code"]) == (2, "MALFORMED_ENVELOPE")


def test_recover_reads_the_password_from_the_file_restic_password_file_names(
        tmp_path, monkeypatch, initialised_repository):
    monkeypatch.delenv("RESTIC_PASSWORD", raising=False)
    summary = staged(tmp_path, "0001")
    repository = initialised_repository(tmp_path / "repository", PASSWORD)
    taken = upload_and_verify(repository, tmp_path / "staged" / "0001", summary)
    (tmp_path / "password").write_text(PASSWORD + "\n")
    report = succeeded(porto_ledger("recover", "--admission", tmp_path / "new-admission", "--repository",
                                    repository.location, data=tmp_path / "new-ledger",
                                    env={"RESTIC_PASSWORD_FILE": str(tmp_path / "password")})).lines[-1]
    assert report["snapshot"] == taken["snapshot"]


def test_recover_from_a_repository_without_any_password_is_refused_and_restores_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("RESTIC_PASSWORD", raising=False)
    monkeypatch.delenv("RESTIC_PASSWORD_FILE", raising=False)
    run = porto_ledger("recover", "--admission", tmp_path / "new-admission", "--repository",
                       str(tmp_path / "repository"), data=tmp_path / "new-ledger")
    assert run.status != 0 and "RESTIC_PASSWORD_FILE" in str(run.lines) + run.stderr
    assert not (tmp_path / "new-ledger").exists() and not (tmp_path / "new-admission").exists()
