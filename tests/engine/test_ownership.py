"""One owner process at a time: anyone else opening the live directory read-write is refused."""

from __future__ import annotations

import orjson
import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.genesis import default_genesis
from tests.support import cli


def assert_owned_elsewhere(run: cli.CliRun) -> None:
    assert run.status == 3, (run.lines, run.stderr[-2000:])
    assert (run.last["ok"], run.last["code"]) == (False, "LEDGER_ALREADY_OWNED")


@pytest.mark.parametrize("verb", ["head", "init", "submit", "export", "backup", "rebuild-indexes"])
def test_cli_verbs_are_refused_while_an_owner_holds_the_directory(owner, ledger_dir, envelopes, tmp_path, verb):
    assert owner.submit(envelopes.account("acct-1")).accepted
    stream = cli.write_stream(tmp_path / "in.jsonl", [orjson.dumps(envelopes.account("acct-2")) + b"\n"])
    arguments = {"submit": [stream], "export": [tmp_path / "export"], "backup": [tmp_path / "backup"]}.get(verb, [])
    assert_owned_elsewhere(cli.porto_ledger(verb, *arguments, data=ledger_dir))
    assert owner.head().sequence == 1
    assert owner.get("state", "account/acct-2") is None
    assert not (tmp_path / "export").exists() and not (tmp_path / "backup").exists()


def test_a_second_owner_in_another_process_is_refused(owner, ledger_dir):
    assert_owned_elsewhere(cli.open_owner_in_subprocess(ledger_dir))


def test_an_owner_in_another_process_keeps_this_one_out(tmp_path):
    data = tmp_path / "ledger"
    cli.init(data)
    with cli.owner_in_subprocess(data):
        with pytest.raises(LedgerError) as raised:
            LedgerOwner.open(data)
        assert raised.value.code == ErrorCode.LEDGER_ALREADY_OWNED
        assert_owned_elsewhere(cli.porto_ledger("head", data=data))
    assert cli.head(data)["sequence"] == 0


def test_a_stopped_owner_leaves_the_directory_free(tmp_path):
    data = tmp_path / "ledger"
    cli.init(data)
    assert cli.succeeded(cli.open_owner_in_subprocess(data)).last == {"ok": True}
    assert cli.head(data)["sequence"] == 0


def test_closing_an_owner_frees_the_directory_within_the_process(ledger_dir):
    with LedgerOwner.open(ledger_dir, genesis=default_genesis()) as first:
        first_head = first.head()
    with LedgerOwner.open(ledger_dir) as reopened:
        assert reopened.head() == first_head
