"""Indexes are pure projections: a rebuild from logical state gives the same bytes (docs/adr/0006)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledger_engine.layout import INDEXES
from ledger_engine.projections.rebuild import indexes_digest, rebuild_indexes
from ledger_engine.storage.rocks import RocksStore
from tests.support import cli


def digest_of(data: Path) -> dict[str, Any]:
    with RocksStore(data, read_only=True) as store:
        return indexes_digest(store)


def damage_indexes(data: Path) -> None:
    """Delete every third index entry and add one no projection would produce."""
    with RocksStore(data) as store:
        doomed = [key for key, _ in store.scan(INDEXES)][::3]
        store.write([*((INDEXES, key, None) for key in doomed), (INDEXES, b"stale/entry", b"{}")])


def rebuild(data: Path) -> dict[str, Any]:
    return cli.succeeded(cli.porto_ledger("rebuild-indexes", data=data)).last


def test_rebuilding_the_demo_indexes_changes_no_byte(stopped_ledger):
    maintained = digest_of(stopped_ledger)
    assert maintained["entries"] > 0
    assert rebuild(stopped_ledger) == maintained
    assert digest_of(stopped_ledger) == maintained


def test_rebuilding_restores_deleted_and_removes_stale_entries(stopped_ledger):
    maintained = digest_of(stopped_ledger)
    damage_indexes(stopped_ledger)
    assert digest_of(stopped_ledger) != maintained
    assert rebuild(stopped_ledger) == maintained
    assert digest_of(stopped_ledger) == maintained


def test_indexes_maintained_through_updates_equal_a_rebuild(owner, envelopes):
    owner.submit(envelopes.account("acct-1", roles=["finance"]))
    payload = {"account_id": "acct-1", "kind": "staff", "identity_digest": envelopes.digest("id", "acct-1"),
               "roles": ["ops"], "status": "deactivated"}
    assert owner.submit(envelopes("RegisterAccount", payload,
                                  expected=[{"cf": "state", "key": "account/acct-1", "revision": 1}])).accepted
    assert [key for key, _ in owner.scan(INDEXES, "actor_by_role/")] == [
        "actor_by_role/admin/genesis-admin", "actor_by_role/ops/acct-1"]
    maintained = owner.at_boundary(indexes_digest)
    assert owner.at_boundary(rebuild_indexes) == maintained
