"""``porto-ledger export`` is journalled like the console's exports: the access is recorded before the files appear."""

from __future__ import annotations

import hashlib

import orjson

from ledger_engine.storage.head import read_head
from ledger_engine.checkpoint.export import METADATA_FILE
from ledger_engine.keys import seq20
from ledger_engine.layout import JOURNAL
from ledger_engine.storage.rocks import RocksStore
from tests.support import cli


def last_entry(data) -> tuple[int, dict]:
    with RocksStore(data, read_only=True) as store:
        head = read_head(store)
        return head.sequence, orjson.loads(store.get(JOURNAL, seq20(head.sequence).encode()))


def test_an_export_records_who_exported_what_before_handing_it_out(stopped_ledger, tmp_path):
    before, _ = last_entry(stopped_ledger)
    run = cli.succeeded(cli.porto_ledger("export", tmp_path / "export", "--actor", "demo-auditor-1",
                                         data=stopped_ledger))
    assert run.last["sequence"] == before  # the export is the ledger as it was before the access was recorded
    sequence, entry = last_entry(stopped_ledger)
    assert sequence == before + 1
    envelope = entry["envelope"]
    assert (envelope["command_type"], envelope["actor_id"], entry["outcome"]) == (
        "RecordExportAccess", "demo-auditor-1", "accepted")
    assert envelope["payload"]["content_sha256"] == hashlib.sha256(
        (tmp_path / "export" / METADATA_FILE).read_bytes()).hexdigest()
    assert (envelope["payload"]["first_sequence"], envelope["payload"]["last_sequence"]) == (1, before)
    cli.succeeded(cli.porto_ledger("verify-export", tmp_path / "export"))


def test_an_export_nobody_may_record_is_not_written(stopped_ledger, tmp_path):
    before, _ = last_entry(stopped_ledger)
    unnamed = cli.porto_ledger("export", tmp_path / "unnamed", data=stopped_ledger)
    assert (unnamed.status, unnamed.last["code"]) == (2, "MALFORMED_ENVELOPE")
    assert last_entry(stopped_ledger)[0] == before
    refused = cli.porto_ledger("export", tmp_path / "finance", "--actor", "demo-finance-1", data=stopped_ledger)
    assert (refused.status, refused.last["code"]) == (2, "CAPABILITY_MISSING")
    sequence, entry = last_entry(stopped_ledger)
    assert (sequence, entry["outcome"]) == (before + 1, "rejected")  # the attempt itself is on the record
    assert not (tmp_path / "unnamed").exists() and not (tmp_path / "finance").exists()
    # no staging copy is left either: only the ledger and its security log
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ledger", "ledger.security.jsonl"]
