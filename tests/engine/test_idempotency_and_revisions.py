"""Command IDs are idempotent for ever; revisions guard every update; rejections are journalled."""

from __future__ import annotations

import threading
from typing import Any

import orjson
import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import seq20
from tests.engine.conftest import bulk_key
from tests.support import cli, seed000
from tests.support.outcomes import assert_rejected
from tests.support.store import owner_dump

ACCOUNT_KEY = "account/acct-1"


def set_roles(envelopes, roles: list[str], *, revision: int | None, account_id: str = "acct-1") -> dict[str, Any]:
    """RegisterAccount changing an existing staff account's roles, stating its expected revision."""
    payload = {"account_id": account_id, "kind": "staff", "identity_digest": envelopes.digest("id", account_id),
               "roles": roles}
    return envelopes("RegisterAccount", payload,
                     expected=[{"cf": "state", "key": f"account/{account_id}", "revision": revision}])


@pytest.fixture
def provisioned(owner, envelopes):
    """An owner where acct-1 (staff, finance) exists at revision 1."""
    assert owner.submit(envelopes.account("acct-1", roles=["finance"])).accepted
    return owner


def test_a_duplicate_in_a_later_process_returns_the_original(tmp_path, envelopes):
    stream = cli.write_stream(tmp_path / "one.jsonl", [orjson.dumps(envelopes.account("acct-1")) + b"\n"])
    data = tmp_path / "ledger"
    cli.init(data)
    [first] = cli.submit(data, stream)
    [again] = cli.submit(data, stream)
    assert first["duplicate"] is False and again["duplicate"] is True
    assert {**again, "duplicate": False} == first
    assert cli.head(data)["sequence"] == 1


def test_a_conflicting_id_adds_no_outcome_and_keeps_the_original(owner, envelopes):
    original = envelopes.account("acct-1", "listener", ["finance"])
    rejected = owner.submit(original)
    assert rejected.code == "INVALID_STATE"
    before = owner_dump(owner)
    with pytest.raises(LedgerError) as raised:
        owner.submit(envelopes.account("acct-1", roles=["finance"]) | {"command_id": original["command_id"]})
    assert raised.value.code == ErrorCode.COMMAND_ID_CONFLICT
    assert owner_dump(owner) == before
    stored = orjson.loads(before["command_result"][original["command_id"].encode()])
    assert stored["envelope_hash"] == seed000.envelope_hash(original)


STALE_EXPECTATIONS = {
    "revision ahead of the record": ("state", ACCOUNT_KEY, 2),
    "absent, but the record exists": ("state", ACCOUNT_KEY, None),
    "absent, but the sentinel exists": ("unique", "identity/{digest}", None),
    "a revision of a missing record": ("state", "account/nobody", 1),
}


@pytest.mark.parametrize("case", STALE_EXPECTATIONS)
def test_a_stale_expectation_is_journalled_writing_only_its_result(provisioned, envelopes, case):
    family, key, revision = STALE_EXPECTATIONS[case]
    key = key.format(digest=envelopes.digest("id", "acct-1"))
    envelope = envelopes.account("acct-2", roles=["ops"])
    envelope["expected_revisions"] = [{"cf": family, "key": key, "revision": revision}]
    before, head = owner_dump(provisioned), provisioned.head()

    outcome = assert_rejected(provisioned, envelope, "STALE_REVISION")

    assert outcome.sequence == head.sequence + 1
    delta = seed000.delta_rows(before, owner_dump(provisioned))
    assert [(row["column_family"], row["key"]) for row in delta] == [("command_result", envelope["command_id"])]
    assert provisioned.journal_entry(outcome.sequence)["delta_hash"] == seed000.delta_hash(delta)


def test_an_absent_expectation_on_an_absent_record_is_met(owner, envelopes):
    envelope = envelopes.account("acct-1", roles=["finance"])
    envelope["expected_revisions"] = [{"cf": "state", "key": ACCOUNT_KEY, "revision": None}]
    assert owner.submit(envelope).accepted
    assert owner.get("state", ACCOUNT_KEY).revision == 1


def test_revisions_start_at_one_and_increment_once_per_updating_command(provisioned, envelopes):
    def revisions() -> tuple[int, int]:
        return provisioned.get("state", ACCOUNT_KEY).revision, provisioned.get("state", "actor/acct-1").revision

    assert revisions() == (1, 1)
    assert provisioned.submit(set_roles(envelopes, ["ops"], revision=1)).accepted
    assert revisions() == (2, 2)
    assert provisioned.submit(envelopes.account("acct-2")).accepted  # touches other records only
    assert provisioned.submit(set_roles(envelopes, ["auditor"], revision=1)).code == "STALE_REVISION"
    assert revisions() == (2, 2)
    assert provisioned.submit(set_roles(envelopes, ["auditor", "ops"], revision=2)).accepted
    assert revisions() == (3, 3)
    assert provisioned.get("state", "actor/acct-1").data == {"roles": ["auditor", "ops"], "status": "active"}


def test_a_record_written_several_times_by_one_command_gains_one_revision(owner, envelopes, bulk_command):
    for expected_revision in (1, 2):
        assert owner.submit(envelopes(bulk_command, {"records": 1, "writes_per_record": 3})).accepted
        assert owner.get("state", bulk_key(0)).revision == expected_revision


def test_a_rejected_command_never_succeeds_later_under_its_id(provisioned, envelopes):
    premature = set_roles(envelopes, ["auditor"], revision=2)
    assert provisioned.submit(premature).code == "STALE_REVISION"
    assert provisioned.submit(set_roles(envelopes, ["ops"], revision=1)).accepted  # now revision 2 would match
    again = provisioned.submit(premature)
    assert (again.duplicate, again.outcome, again.code) == (True, "rejected", "STALE_REVISION")
    assert provisioned.get("state", ACCOUNT_KEY).data["roles"] == ["ops"]
    assert provisioned.get("state", ACCOUNT_KEY).revision == 2


def submit_as_one_group(owner: LedgerOwner, documents: list[dict[str, Any]]) -> list[Any]:
    """Queue every document while the executor is held, so they drain into one group commit."""
    gate = threading.Event()
    held = owner.executor.call(lambda store: gate.wait())
    futures = [owner.submit_async(document) for document in documents]
    gate.set()
    held.result()
    answers = []
    for future in futures:
        try:
            answers.append(future.result())
        except LedgerError as error:
            answers.append(error.code)
    return answers


def test_duplicates_inside_one_group_commit(owner, envelopes):
    first = envelopes.account("acct-1", roles=["finance"])
    conflicting = envelopes.account("acct-9") | {"command_id": first["command_id"]}
    dependent = set_roles(envelopes, ["ops"], revision=1)  # needs ``first`` from the same group
    burst = [first, first, conflicting, dependent, first, dependent]

    answers = submit_as_one_group(owner, burst)

    summary = [answer if isinstance(answer, ErrorCode) else (answer.sequence, answer.code, answer.duplicate)
               for answer in answers]
    assert summary == [(1, "OK", False), (1, "OK", True), ErrorCode.COMMAND_ID_CONFLICT,
                       (2, "OK", False), (1, "OK", True), (2, "OK", True)]
    assert answers[1].entry_hash == answers[4].entry_hash == answers[0].entry_hash
    assert owner.head().sequence == 2
    assert [key for key, _ in owner.scan("journal")] == [seq20(1), seq20(2)]
    assert owner.get("state", "account/acct-9") is None
    assert owner.resolve(first["command_id"]).entry_hash == answers[0].entry_hash
