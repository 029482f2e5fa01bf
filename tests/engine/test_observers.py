"""The executor reports every group it answers to its listeners: each command's type, outcome and latency."""

from __future__ import annotations

import threading

import pytest

from ledger_engine.application.observers import GroupReport
from ledger_engine.errors import ErrorCode, LedgerError

GROUP = 5


@pytest.fixture
def reports(owner) -> list[GroupReport]:
    heard: list[GroupReport] = []
    owner.add_command_listener(heard.append)
    return heard


def outcomes(reports: list[GroupReport]) -> list[tuple[str, str]]:
    return [(command.command_type, command.outcome) for report in reports for command in report.commands]


def test_each_outcome_is_reported_once_with_its_type(owner, envelopes, reports):
    account = envelopes.account("acct-1")
    assert owner.submit(account).accepted
    assert owner.submit(account).duplicate
    stale = envelopes("RegisterAccount", {**account["payload"], "roles": ["finance"]},
                      expected=[{"cf": "state", "key": "account/acct-1", "revision": 9}])
    assert owner.submit(stale).outcome == "rejected"
    regressed = {**envelopes.account("acct-2"), "admitted_at_ms": 1}
    with pytest.raises(LedgerError) as refused:
        owner.submit(regressed)
    assert refused.value.code == ErrorCode.ADMISSION_TIME_REGRESSED
    assert outcomes(reports) == [("RegisterAccount", outcome) for outcome in
                                 ("accepted", "duplicate", "rejected", "refused")]
    assert all(report.size == 1 and report.commands[0].latency_s >= 0 for report in reports)


def test_commands_queued_behind_a_task_are_reported_as_one_group(owner, envelopes, reports):
    release = threading.Event()
    blocker = owner.executor.call(lambda store: release.wait())
    futures = [owner.submit_async(envelopes.account(f"acct-{n}")) for n in range(GROUP)]
    release.set()
    blocker.result()
    assert all(future.result().accepted for future in futures)
    [group] = reports
    assert group.size == GROUP and outcomes(reports) == [("RegisterAccount", "accepted")] * GROUP


def test_a_failed_write_reports_its_group_as_halted(owner, envelopes, reports, monkeypatch):
    def failing_write(ops):
        raise OSError("disk said no")

    monkeypatch.setattr(owner.store, "write", failing_write)
    with pytest.raises(LedgerError):
        owner.submit(envelopes.account("acct-1"))
    assert outcomes(reports) == [("RegisterAccount", "halted")]
    assert owner.halt_cause() == ErrorCode.LEDGER_HALTED


def test_a_failing_listener_changes_no_answer(owner, envelopes, reports):
    def broken(report):
        raise RuntimeError("observer bug")

    owner.add_command_listener(broken)
    assert owner.submit(envelopes.account("acct-1")).accepted
    assert owner.head().sequence == 1 and len(reports) == 1
