"""Recovery's target directories: anything but two separate, absent or empty directories is refused up front."""

from __future__ import annotations

import pytest

from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.offsite import recover, stage_backup
from ledger_engine.checkpoint.verify import VerificationError
from ledger_engine.errors import ErrorCode
from ledger_engine.genesis import default_genesis


@pytest.fixture
def backups(tmp_path):
    with LedgerOwner.open(tmp_path / "live", genesis=default_genesis()) as owner:
        CommandGateway(owner, tmp_path / "admission").evidence.put(b"evidence bytes")
        stage_backup(owner.checkpoint, owner.store.path, tmp_path / "admission", tmp_path / "staged" / "0001")
    return tmp_path / "staged"


def test_a_data_directory_that_is_a_file_is_refused_with_a_code_and_left_alone(backups, tmp_path):
    target = tmp_path / "ledger"
    target.write_bytes(b"someone's file")
    with pytest.raises(VerificationError) as refused:
        recover(target, tmp_path / "new-admission", backup_dir=backups)
    assert refused.value.code == ErrorCode.VERIFICATION_FAILED
    assert target.read_bytes() == b"someone's file" and not (tmp_path / "new-admission").exists()


@pytest.mark.parametrize("admission", ["new", "new/admission"])
def test_an_admission_directory_that_is_or_lies_in_the_data_directory_is_refused_before_anything_is_restored(
        backups, tmp_path, admission):
    with pytest.raises(VerificationError) as refused:
        recover(tmp_path / "new", tmp_path / admission, backup_dir=backups)
    assert refused.value.code == ErrorCode.VERIFICATION_FAILED
    assert not (tmp_path / "new").exists()
