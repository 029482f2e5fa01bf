"""`porto-ledger promote`: an operator promotes a restored ledger once reconcile has exited 0; dispatch itself is
paused and resumed only by journalled commands (docs/adr/0091)."""

from __future__ import annotations

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.backup import backup_owner, restore
from ledger_engine.genesis import default_genesis
from tests.support.cli import porto_ledger


def test_dispatch_stays_off_after_restore_until_an_operator_promotes_the_ledger(tmp_path):
    with LedgerOwner.open(tmp_path / "live", genesis=default_genesis()) as owner:
        backup_owner(owner, tmp_path / "backup")
    restore(tmp_path / "backup", tmp_path / "restored")
    with LedgerOwner.open(tmp_path / "restored") as owner:
        assert owner.dispatch_state()["enabled"] is False
        head = owner.head()

    promoted = porto_ledger("promote", "--reason", "reconciled", data=tmp_path / "restored")
    assert promoted.status == 0 and promoted.lines[-1]["reconciliation_owed_lifted"] is True
    with LedgerOwner.open(tmp_path / "restored") as owner:
        assert owner.dispatch_state()["enabled"] is True
        assert owner.head() == head  # promotion is no command: the journal says nothing of it


def test_promote_needs_a_reason_and_a_stopped_ledger(tmp_path):
    assert porto_ledger("promote", data=tmp_path / "live").status == 2
    with LedgerOwner.open(tmp_path / "live", genesis=default_genesis()) as owner:
        held = porto_ledger("promote", "--reason", "incident", data=tmp_path / "live")
        assert held.status == 3 and held.lines[-1]["code"] == "LEDGER_ALREADY_OWNED"
        assert owner.dispatch_state()["enabled"] is True


def test_the_cli_no_longer_pauses_or_resumes_dispatch(tmp_path):
    with LedgerOwner.open(tmp_path / "live", genesis=default_genesis()):
        pass
    assert porto_ledger("dispatch", "pause", "--reason", "incident", data=tmp_path / "live").status == 2
