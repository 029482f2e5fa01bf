"""Batches admitted together: each takes a turn with one admission time and queues its commands in turn order."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from ledger_engine.adapters.gateway import CommandGateway, Turns
from ledger_engine.errors import ErrorCode, LedgerError
from tests.conftest import GENESIS_ADMIN


def account_request(number: int) -> dict:
    return {"account_id": f"acct-{number}", "kind": "staff", "identity_digest": f"{number:064x}", "roles": []}


def admit_together(gateway: CommandGateway, numbers: range, *, turn_taken: threading.Event,
                   stored: threading.Event, go_on: threading.Event | None = None):
    """Envelopes for ``numbers`` at one turn's time, queued in turn once ``go_on`` is set; the envelopes and answers."""
    with gateway.admitting_together() as batch:
        turn_taken.set()
        envelopes = [gateway.envelope("RegisterAccount", account_request(number), actor_id=GENESIS_ADMIN,
                                      command_id=f"00000000-0000-4000-8000-{number:012d}",
                                      admitted_at_ms=batch.admitted_at_ms) for number in numbers]
        stored.set()
        if go_on is not None:
            assert go_on.wait(10)
        queued = batch.queue(envelopes)
    return envelopes, gateway.answers(queued)


def test_a_later_turn_stored_first_waits_to_queue_until_the_earlier_turn_has(owner, tmp_path):
    times = iter(range(1_800_000_000_000, 1_800_000_100_000, 10))
    gateway = CommandGateway(owner, tmp_path / "admission", clock=lambda: next(times))
    events = {name: threading.Event() for name in ("slow_turn", "slow_stored", "fast_turn", "fast_stored", "go_on")}
    with ThreadPoolExecutor(2) as pool:
        slow = pool.submit(admit_together, gateway, range(1, 4), turn_taken=events["slow_turn"],
                           stored=events["slow_stored"], go_on=events["go_on"])
        assert events["slow_turn"].wait(10)
        fast = pool.submit(admit_together, gateway, range(4, 7), turn_taken=events["fast_turn"],
                           stored=events["fast_stored"])
        assert events["fast_stored"].wait(10)
        threading.Event().wait(0.1)  # room for a wrong queueing to happen; the right one waits whatever the delay
        assert not fast.done() and owner.head().sequence == 0  # stored, but waiting for the earlier turn
        events["go_on"].set()
        batches = [slow.result(), fast.result()]
    for envelopes, answers in batches:
        assert [answer.accepted for answer in answers] == [True] * 3
        assert len({envelope["admitted_at_ms"] for envelope in envelopes}) == 1  # one time for the whole turn
        # None was admitted again: the ledger journalled the very envelopes each turn stored.
        assert [owner.journal_entry(answer.sequence)["envelope"] for answer in answers] == envelopes
    (slow_envelopes, slow_answers), (fast_envelopes, fast_answers) = batches
    assert slow_envelopes[0]["admitted_at_ms"] < fast_envelopes[0]["admitted_at_ms"]
    assert max(answer.sequence for answer in slow_answers) < min(answer.sequence for answer in fast_answers)


def test_a_turn_that_queues_nothing_still_lets_the_next_one_through(owner, tmp_path):
    gateway = CommandGateway(owner, tmp_path / "admission")
    try:
        with gateway.admitting_together():
            raise RuntimeError("the batch failed before it queued")
    except RuntimeError:
        pass
    envelopes, answers = admit_together(gateway, range(1, 3), turn_taken=threading.Event(),
                                        stored=threading.Event())
    assert [answer.accepted for answer in answers] == [True, True]


def test_turns_pass_in_the_order_they_were_taken():
    turns, passed = Turns(), []
    first, second = turns.take(), turns.take()

    def go_through(turn: int) -> None:
        with turns.through(turn):
            passed.append(turn)

    later = threading.Thread(target=go_through, args=(second,))
    later.start()
    later.join(0.1)
    assert later.is_alive() and passed == []
    go_through(first)
    later.join(5)
    assert passed == [first, second]


def test_an_admitted_envelope_is_stored_only_when_kept_and_a_later_keep_gets_the_first_stored(owner, tmp_path):
    times = iter(range(1_800_000_000_000, 1_800_000_100_000, 10))
    gateway = CommandGateway(owner, tmp_path / "admission", clock=lambda: next(times))
    command_id = "00000000-0000-4000-8000-000000000001"

    def admitted(number: int):
        return gateway.admitted("RegisterAccount", account_request(number), actor_id=GENESIS_ADMIN,
                                command_id=command_id)

    first, again, other = admitted(1), admitted(1), admitted(2)
    assert gateway.envelopes.load(command_id) is None  # admitted and checked, nothing stored
    kept = gateway.keep(first)
    assert gateway.envelopes.load(command_id) == kept == first.envelope
    assert gateway.keep(again) == kept  # the same request, admitted later: the envelope stored first
    assert admitted(1) == kept
    with pytest.raises(LedgerError) as refused:
        gateway.keep(other)  # another request under the same ID
    assert refused.value.code == ErrorCode.COMMAND_ID_CONFLICT
    assert gateway.submit(kept).accepted
