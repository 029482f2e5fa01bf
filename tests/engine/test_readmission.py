"""Threads that reach the ledger out of admission-time order: the gateway re-admits, never duplicates."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from ledger_engine.adapters.gateway import CommandGateway
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import JOURNAL
from tests.conftest import GENESIS_ADMIN


def account_request(number: int) -> dict[str, Any]:
    return {"account_id": f"acct-{number}", "kind": "staff", "identity_digest": f"{number:064x}", "roles": []}


class HeldBack:
    """The ledger, with the first submission of one command held until another command has committed."""

    def __init__(self, owner, held_command_id: str) -> None:
        self.owner = owner
        self.held = held_command_id
        self.overtaken = threading.Event()
        self.refusals: list[str] = []

    def submit(self, document):
        if document["command_id"] == self.held and not self.overtaken.is_set():
            assert self.overtaken.wait(10)
        try:
            outcome = self.owner.submit(document)
        except LedgerError as error:
            self.refusals.append(error.code)
            raise
        if document["command_id"] != self.held:
            self.overtaken.set()
        return outcome

    def __getattr__(self, name):
        return getattr(self.owner, name)


def journalled_times(owner) -> list[int]:
    return [entry["envelope"]["admitted_at_ms"] for entry in
            (owner.journal_entry(sequence) for sequence in range(1, owner.head().sequence + 1))]


def test_an_overtaken_envelope_is_readmitted_under_its_command_id(owner, tmp_path):
    times = iter(range(1_800_000_000_000, 1_800_000_100_000, 10))
    ledger = HeldBack(owner, "00000000-0000-4000-8000-000000000001")
    gateway = CommandGateway(ledger, tmp_path / "admission", clock=lambda: next(times))
    slow = gateway.envelope("RegisterAccount", account_request(1), actor_id=GENESIS_ADMIN, command_id=ledger.held)
    fast = gateway.envelope("RegisterAccount", account_request(2), actor_id=GENESIS_ADMIN,
                            command_id="00000000-0000-4000-8000-000000000002")
    assert slow["admitted_at_ms"] < fast["admitted_at_ms"]

    with ThreadPoolExecutor(2) as pool:
        slow_outcome = pool.submit(gateway.submit, slow)
        fast_outcome = pool.submit(gateway.submit, fast)
        outcomes = [slow_outcome.result(), fast_outcome.result()]

    assert [outcome.accepted for outcome in outcomes] == [True, True]
    assert ledger.refusals == [ErrorCode.ADMISSION_TIME_REGRESSED]
    readmitted = owner.journal_entry(outcomes[0].sequence)["envelope"]
    assert readmitted == {**slow, "admitted_at_ms": readmitted["admitted_at_ms"]}
    assert readmitted["admitted_at_ms"] >= fast["admitted_at_ms"]
    assert gateway.envelopes.load(ledger.held) == readmitted
    assert journalled_times(owner) == sorted(journalled_times(owner))
    # The caller's retry (a resubmitted form) is answered by command ID, with no second command.
    again = gateway.execute("RegisterAccount", account_request(1), actor_id=GENESIS_ADMIN, command_id=ledger.held)
    assert again.duplicate and again.sequence == outcomes[0].sequence


def test_a_retry_holding_the_old_envelope_gets_the_readmitted_answer(owner, tmp_path):
    gateway = CommandGateway(owner, tmp_path / "admission", clock=lambda: 1_800_000_000_000)
    command_id = "00000000-0000-4000-8000-00000000000a"
    old = gateway.envelope("RegisterAccount", account_request(1), actor_id=GENESIS_ADMIN, command_id=command_id)
    owner.submit(gateway.envelope("RegisterAccount", account_request(2), actor_id=GENESIS_ADMIN,
                                  command_id="00000000-0000-4000-8000-00000000000b") | {"admitted_at_ms": old["admitted_at_ms"] + 5})
    first = gateway.submit(old)  # refused for time, re-admitted
    second = gateway.submit(old)  # another thread still held the old one: same answer, no conflict
    assert first.accepted and second.duplicate and second.sequence == first.sequence


@pytest.mark.parametrize("seed", [1, 2])
def test_many_threads_with_random_delays_each_run_once_in_time_order(owner, tmp_path, seed):
    gateway = CommandGateway(owner, tmp_path / "admission")
    chance = random.Random(seed)
    delays = [chance.random() / 50 for _ in range(120)]
    built: dict[str, int] = {}

    def run(number: int):
        envelope = gateway.envelope("RegisterAccount", account_request(number), actor_id=GENESIS_ADMIN,
                                    command_id=f"00000000-0000-4000-8000-{number:012d}")
        built[envelope["command_id"]] = envelope["admitted_at_ms"]
        threading.Event().wait(delays[number])  # time was taken; another thread may commit first
        return gateway.submit(envelope)

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(run, range(120)))
    assert all(outcome.accepted and not outcome.duplicate for outcome in outcomes)
    assert sorted(outcome.sequence for outcome in outcomes) == list(range(1, 121))
    assert journalled_times(owner) == sorted(journalled_times(owner))
    entries = [entry for _, entry in owner.scan(JOURNAL, limit=1_000)]
    assert len({entry["envelope"]["command_id"] for entry in entries}) == len(entries) == 120
    readmitted = [entry for entry in entries if entry["envelope"]["admitted_at_ms"] != built[entry["envelope"]["command_id"]]]
    assert readmitted, "the delays should have let some threads overtake others"
    assert all(gateway.envelopes.load(entry["envelope"]["command_id"]) == entry["envelope"] for entry in entries)
