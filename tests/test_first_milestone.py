"""The engine's first milestone, end to end on the demo scenario.

Streams, day close, allocation, statements and a payout run prepared and
approved by two different finance actors, ending in payment intents in the
outbox: committed through `porto-ledger submit` while being SIGKILLed, replayed
in a fresh process to the same digest, refusing duplicate and stale commands,
and restored from a verified backup with no effect dispatched and every
payment as it was.
"""

from __future__ import annotations

import random
import uuid

import orjson
import pytest

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.backup import backup_owner, restore
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import OUTBOX, STATE
from tests.support import cli

pytestmark = [pytest.mark.slow_kill, pytest.mark.durable]

SEED, LISTENERS, DAYS, KILLS = 11, 12, 3, 8
EVERYTHING = 10**9


@pytest.fixture(scope="module")
def milestone(tmp_path_factory):
    root = tmp_path_factory.mktemp("milestone")
    lines = cli.demo_lines(SEED, listeners=LISTENERS, days=DAYS)
    stream = cli.write_stream(root / "demo.jsonl", lines)
    cli.init_demo(root / "uninterrupted")
    cli.submit(root / "uninterrupted", stream)
    cli.init_demo(root / "ledger")
    kills = _submit_through_kills(root, lines)
    assert kills == KILLS, f"only {kills} kills landed before the stream ended"
    return root, lines


def _submit_through_kills(root, lines) -> int:
    """Kill the submitting process at random points; each time, submit again what has no answer."""
    rng = random.Random(SEED)
    answered = kills = attempt = 0
    while kills < KILLS and answered < len(lines):
        attempt += 1
        rest = cli.write_stream(root / f"rest-{attempt}.jsonl", lines[answered:])
        # Each kill may use only its share of what is left, so a faster engine still meets every kill mid-stream.
        share = (len(lines) - answered) // (KILLS - kills + 1)
        run = cli.kill_during("submit", rest, data=root / "ledger", after_lines=rng.randrange(1, max(2, min(80, share))),
                              delay_s=rng.uniform(0, 0.005))
        answered += len(run.lines)
        kills += run.killed
    cli.submit(root / "ledger", cli.write_stream(root / "all.jsonl", lines))  # everything, once more
    return kills


def _records(owner, prefix):
    return {key: value["data"] for key, value in owner.scan(STATE, prefix, limit=EVERYTHING)}


def test_the_killed_run_ends_at_the_uninterrupted_head(milestone):
    root, _ = milestone
    assert cli.head(root / "ledger") == cli.head(root / "uninterrupted")


def test_streams_become_allocations_statements_and_an_approved_run_with_intents(milestone):
    root, _ = milestone
    with LedgerOwner.open(root / "ledger") as owner:
        assert any(day["status"] == "closed" for day in _records(owner, "listener_day/").values())
        assert _records(owner, "allocation_line/")
        runs = [run for run in _records(owner, "payment_run/").values() if run["status"] == "approved"]
        assert runs and all(run["prepared_by"] != run["approval"]["approved_by"] for run in runs)
        assert {run["prepared_by"] for run in runs} == {"demo-finance-1", "demo-finance-2"}  # one re-prepared
        intents = [value["data"] for _, value in owner.scan(OUTBOX, "", limit=EVERYTHING)
                   if value["data"]["kind"] == "payment.transfer"]
        paid_by_runs = {payment["effect_id"] for run in runs for payment in run["frozen"]["payments"]}
        assert paid_by_runs <= {intent["effect_id"] for intent in intents}
        assert any(batch["state"] == "confirmed" and batch["kind"] == "statement_index"
                   for batch in _records(owner, "batch/").values())


def test_a_fresh_process_replays_to_the_same_digest(milestone):
    root, _ = milestone
    cli.export(root / "ledger", root / "export")
    replayed = cli.porto_ledger("replay", root / "export", data=root / "replayed", hash_seed=4242)
    assert replayed.status == 0, replayed.stderr
    head = cli.head(root / "ledger")
    assert (replayed.last["sequence"], replayed.last["entry_hash"], replayed.last["logical_state_hash"]) == (
        head["sequence"], head["entry_hash"], head["logical_state_hash"])


def test_duplicate_and_stale_commands_are_refused(milestone):
    root, lines = milestone
    allocation = next(orjson.loads(line) for line in lines if b'"AllocateListenerDay"' in line)
    with LedgerOwner.open(root / "ledger") as owner:
        head = owner.head()
        again = owner.submit(allocation)
        assert again.duplicate and owner.head() == head
        stale = owner.submit({**allocation, "command_id": str(uuid.uuid4()),
                              "admitted_at_ms": owner.admission_floor_ms()})
        assert (stale.outcome, stale.code) == ("rejected", ErrorCode.STALE_REVISION)
        assert owner.head().sequence == head.sequence + 1


def test_a_restore_dispatches_nothing_and_keeps_every_payment_as_it_was(milestone, tmp_path):
    root, _ = milestone
    with LedgerOwner.open(root / "ledger") as owner:
        backup_owner(owner, tmp_path / "backup")
        payments, outbox = _records(owner, "payment/"), owner.scan(OUTBOX, "", limit=EVERYTHING)
    restored = restore(tmp_path / "backup", tmp_path / "restored")
    assert restored["dispatch_enabled"] is False
    with LedgerOwner.open(tmp_path / "restored") as owner:
        assert owner.dispatch_state()["enabled"] is False
        assert _records(owner, "payment/") == payments
        assert owner.scan(OUTBOX, "", limit=EVERYTHING) == outbox
        assert {payment["state"] for payment in payments.values()} >= {"confirmed", "approved"}
