"""The ledger owns its clock: no path admits a command dated more than a small skew ahead of the owner's."""

from __future__ import annotations

import orjson
import pytest

from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.application.admission_clock import AdmissionClock
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.errors import ErrorCode, LedgerError
from tests.conftest import GENESIS_ADMIN, SUITE_WALL_CLOCK_MS
from tests.support import cli
from tests.support.outcomes import assert_refused
from tests.support.step_up import genesis as step_up_genesis

NOW_MS = 1_800_000_000_000
SKEW_MS = 5_000
DAY_MS = 86_400_000
TEN_YEARS_MS = 3_652 * DAY_MS


def account_at(envelopes, account_id: str, at_ms: int, **extra) -> dict:
    envelopes.clock_ms = at_ms - 1_000
    return envelopes.account(account_id, **extra)


def pinned(ledger_dir, now_ms: int = NOW_MS) -> LedgerOwner:
    return LedgerOwner.open(ledger_dir, genesis=step_up_genesis(),
                            clock=AdmissionClock(now_ms=lambda: now_ms, max_ahead_ms=SKEW_MS))


def test_a_command_dated_past_the_skew_is_refused_and_changes_nothing(ledger_dir, envelopes):
    with pinned(ledger_dir) as owner:
        assert_refused(owner, account_at(envelopes, "acct-1", NOW_MS + SKEW_MS + 1), ErrorCode.ADMISSION_TIME_AHEAD)
        assert owner.submit(account_at(envelopes, "acct-2", NOW_MS + SKEW_MS)).accepted


def test_a_check_dated_ten_years_ahead_cannot_freeze_the_ledger(ledger_dir, envelopes):
    with pinned(ledger_dir) as owner:
        envelopes.clock_ms = NOW_MS - 60_000
        assert owner.submit(envelopes.account("finance-1", roles=["finance"])).accepted
        far_ahead = envelopes("CheckConservation", {"check_id": "check-1"}, actor="finance-1",
                              admitted_at_ms=NOW_MS + TEN_YEARS_MS)
        assert_refused(owner, far_ahead, ErrorCode.ADMISSION_TIME_AHEAD)

        envelopes.clock_ms = NOW_MS - 1_000
        honest = owner.submit(envelopes("CheckConservation", {"check_id": "check-2"}, actor="finance-1"))
        assert honest.accepted and owner.admission_floor_ms() == NOW_MS


def test_a_journalled_command_is_answered_by_its_id_after_the_owners_clock_is_set_back(ledger_dir, envelopes):
    envelopes.clock_ms = NOW_MS - 1_000
    envelope = envelopes.account("acct-1")
    with pinned(ledger_dir) as owner:
        first = owner.submit(envelope)
    with pinned(ledger_dir, now_ms=NOW_MS - DAY_MS) as owner:
        again = owner.submit(envelope)
    assert again.duplicate and again.sequence == first.sequence


def test_replay_judges_history_by_what_was_admitted_not_by_todays_clock(ledger_dir, envelopes, tmp_path):
    later_ms = SUITE_WALL_CLOCK_MS + TEN_YEARS_MS
    envelopes.clock_ms = later_ms - 10_000
    with pinned(ledger_dir, now_ms=later_ms) as owner:
        for number in range(3):
            assert owner.submit(envelopes.account(f"acct-{number}")).accepted
        exported = owner.with_checkpoint(lambda store: export_store(store, tmp_path / "export"))

    replayed = replay_export(tmp_path / "export", tmp_path / "replayed")
    assert replayed["sequence"] == exported["sequence"] == 3
    assert replayed["logical_state_hash"] == exported["logical_state_hash"]


def test_the_gateway_of_a_host_whose_clock_runs_ahead_is_refused(ledger_dir, tmp_path):
    with pinned(ledger_dir) as owner:
        gateway = CommandGateway(owner, tmp_path / "admission", clock=lambda: NOW_MS + DAY_MS)
        with pytest.raises(LedgerError) as refused:
            gateway.execute("RegisterAccount", {"account_id": "acct-1", "kind": "staff",
                                                "identity_digest": "ab" * 32, "roles": []}, actor_id=GENESIS_ADMIN)
        assert refused.value.code == ErrorCode.ADMISSION_TIME_AHEAD
        assert owner.head().sequence == 0


def test_porto_ledger_submit_answers_a_line_dated_ahead_and_runs_the_others(tmp_path, envelopes):
    # Ahead of the wall clock of this process's owner (the suite's) and of a child's (today's) alike.
    ahead = account_at(envelopes, "acct-2", SUITE_WALL_CLOCK_MS + DAY_MS)
    envelopes.clock_ms = 1_790_812_800_000
    lines = [envelopes.account("acct-1"), ahead, envelopes.account("acct-3")]
    data = tmp_path / "ledger"
    cli.init(data)
    run = cli.porto_ledger("submit", cli.write_stream(tmp_path / "in.jsonl", [orjson.dumps(e) + b"\n" for e in lines]), data=data)
    assert run.status == 0, run.stderr[-2000:]
    assert [(answer["outcome"], answer["code"]) for answer in run.lines] == [
        ("accepted", "OK"), ("refused", "ADMISSION_TIME_AHEAD"), ("accepted", "OK")]
    assert cli.head(data)["sequence"] == 2


@pytest.mark.parametrize("configured, skew_ms", [({}, 5_000), ({"PORTO_ADMISSION_SKEW_MS": "2000"}, 2_000)])
def test_the_skew_is_configured_by_the_environment(configured, skew_ms):
    assert AdmissionClock.configured(configured).max_ahead_ms == skew_ms


@pytest.mark.parametrize("value", ["0", "-5", "5s", "60001", "1e3"])
def test_a_skew_that_is_not_a_small_whole_number_of_milliseconds_is_refused(value):
    with pytest.raises(ValueError, match="PORTO_ADMISSION_SKEW_MS"):
        AdmissionClock.configured({"PORTO_ADMISSION_SKEW_MS": value})
