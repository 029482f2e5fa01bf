"""The same envelopes give the same chain and state in any process, whatever PYTHONHASHSEED is."""

from __future__ import annotations

from ledger_engine.checkpoint.export import EVENTS_FILE, JOURNAL_FILE, METADATA_FILE, ROWS_FILE
from tests.engine.conftest import demo_scenario_lines
from tests.support import cli

EXPORT_FILES = (ROWS_FILE, JOURNAL_FILE, EVENTS_FILE, METADATA_FILE)


def test_the_demo_scenario_does_not_depend_on_the_hash_seed(demo_ledger):
    assert b"".join(demo_scenario_lines(hash_seed=4242)) == demo_ledger.stream.read_bytes()


def test_submitting_in_another_process_gives_identical_entries_and_state(demo_ledger, tmp_path):
    data = tmp_path / "ledger"
    cli.init_demo(data, hash_seed=12345)
    outcomes = cli.submit(data, demo_ledger.stream, hash_seed=12345)

    assert [answer["entry_hash"] for answer in outcomes] == [answer["entry_hash"] for answer in demo_ledger.outcomes]
    assert outcomes == demo_ledger.outcomes
    assert cli.head(data) == demo_ledger.head
    ours, theirs = cli.export(data, tmp_path / "ours"), cli.export(demo_ledger.data, tmp_path / "theirs")
    assert ours == theirs
    for name in EXPORT_FILES:
        assert (tmp_path / "ours" / name).read_bytes() == (tmp_path / "theirs" / name).read_bytes(), name


def test_replaying_an_export_reproduces_every_entry_and_the_state(demo_ledger, tmp_path):
    metadata = cli.export(demo_ledger.data, tmp_path / "export")
    replayed = tmp_path / "replayed"
    run = cli.succeeded(cli.porto_ledger("replay", tmp_path / "export", data=replayed, hash_seed=999))

    head = demo_ledger.head
    assert run.last == {"ok": True, **head, "journal_tree": metadata["journal_tree"]}
    assert cli.head(replayed) == head
    cli.export(replayed, tmp_path / "again")
    for name in EXPORT_FILES:
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "export" / name).read_bytes(), name
