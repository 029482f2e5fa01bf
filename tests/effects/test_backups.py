"""Scheduled backups: verified before they count, and the age the console shows."""

from __future__ import annotations

from porto_console.effects.backups import STALE_AFTER_MS, newest_good_backup, take_backup


def test_newest_verified_backup_and_its_age(owner, envelopes, tmp_path):
    root = tmp_path / "backups"
    assert newest_good_backup(root) is None
    first = take_backup(owner, root)
    owner.submit(envelopes.account("fin-1", roles=["finance"]))
    second = take_backup(owner, root)
    assert (first["sequence"], second["sequence"]) == (0, 1)
    newest = newest_good_backup(root, now_ms=second["created_at_ms"] + 1_000)
    assert (newest["path"], newest["sequence"], newest["age_ms"], newest["stale"]) == (second["path"], 1, 1_000, False)
    assert newest_good_backup(root, now_ms=second["created_at_ms"] + STALE_AFTER_MS + 1)["stale"] is True


def test_a_damaged_newest_backup_does_not_count(owner, envelopes, tmp_path):
    root = tmp_path / "backups"
    first = take_backup(owner, root)
    owner.submit(envelopes.account("fin-1", roles=["finance"]))
    second = take_backup(owner, root)
    next(path for path in (tmp_path / "backups").glob("*/export/journal.jsonl") if second["path"] in str(path)).write_bytes(b"")
    assert newest_good_backup(root)["path"] == first["path"]
