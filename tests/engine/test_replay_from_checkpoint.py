"""Replay can start from an earlier verified checkpoint and replays only the journal suffix."""

from __future__ import annotations

import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.storage.digest import logical_state_hash
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.checkpoint.verify import VerificationError
from ledger_engine.demo import demo_envelopes, demo_genesis
from ledger_engine.projections.rebuild import indexes_digest


def _submit_all(owner, envelopes):
    for future in [owner.submit_async(envelope) for envelope in envelopes]:
        future.result()


@pytest.fixture
def two_exports(tmp_path):
    envelopes = demo_envelopes(seed=3, listeners=4, days=2)
    middle = len(envelopes) // 2
    with LedgerOwner.open(tmp_path / "live", genesis=demo_genesis()) as owner:
        _submit_all(owner, envelopes[:middle])
        owner.with_checkpoint(lambda store: export_store(store, tmp_path / "early"))
        _submit_all(owner, envelopes[middle:])
        owner.with_checkpoint(lambda store: export_store(store, tmp_path / "late"))
        live_indexes = owner.at_boundary(indexes_digest)
        live_head = owner.head()
    return tmp_path / "early", tmp_path / "late", live_head, live_indexes


def test_replay_from_checkpoint_reaches_the_later_head(tmp_path, two_exports):
    early, late, live_head, live_indexes = two_exports
    summary = replay_export(late, tmp_path / "rebuilt", checkpoint_dir=early)
    assert (summary["sequence"], summary["entry_hash"]) == (live_head.sequence, live_head.entry_hash)
    with LedgerOwner.open(tmp_path / "rebuilt") as owner:
        assert owner.at_boundary(indexes_digest) == live_indexes
        assert owner.dispatch_state()["enabled"] is False
        assert owner.at_boundary(logical_state_hash) == summary["logical_state_hash"]


def test_a_later_export_is_not_an_earlier_checkpoint(tmp_path, two_exports):
    early, late, _, _ = two_exports
    with pytest.raises(VerificationError) as raised:
        replay_export(early, tmp_path / "rebuilt", checkpoint_dir=late)
    assert "not an earlier state" in raised.value.reason


def test_a_checkpoint_of_another_history_is_refused(tmp_path, two_exports):
    early, late, _, _ = two_exports
    with LedgerOwner.open(tmp_path / "other", genesis=demo_genesis()) as owner:
        _submit_all(owner, demo_envelopes(seed=4, listeners=4, days=2)[:5])
        owner.with_checkpoint(lambda store: export_store(store, tmp_path / "foreign"))
    with pytest.raises(VerificationError) as raised:
        replay_export(late, tmp_path / "rebuilt", checkpoint_dir=tmp_path / "foreign")
    assert "not on this journal" in raised.value.reason
