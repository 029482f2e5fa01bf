"""`porto-ledger dispatch`: an operator resumes effect dispatch after reconciling a restore."""

from __future__ import annotations

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.backup import backup_owner, restore
from ledger_engine.genesis import default_genesis
from tests.support.cli import porto_ledger


def test_dispatch_stays_off_after_restore_until_an_operator_resumes_it(tmp_path):
    with LedgerOwner.open(tmp_path / "live", genesis=default_genesis()) as owner:
        backup_owner(owner, tmp_path / "backup")
    restore(tmp_path / "backup", tmp_path / "restored")

    resumed = porto_ledger("dispatch", "resume", "--reason", "reconciled", data=tmp_path / "restored")
    assert resumed.status == 0
    assert resumed.lines[-1]["enabled"] is True and resumed.lines[-1]["reason"] == "reconciled"
    with LedgerOwner.open(tmp_path / "restored") as owner:
        assert owner.dispatch_state()["enabled"] is True


def test_dispatch_needs_a_reason_and_a_stopped_ledger(tmp_path):
    assert porto_ledger("dispatch", "resume", data=tmp_path / "live").status == 2
    with LedgerOwner.open(tmp_path / "live", genesis=default_genesis()) as owner:
        held = porto_ledger("dispatch", "pause", "--reason", "incident", data=tmp_path / "live")
        assert held.status == 3 and held.lines[-1]["code"] == "LEDGER_ALREADY_OWNED"
        assert owner.dispatch_state()["enabled"] is True
