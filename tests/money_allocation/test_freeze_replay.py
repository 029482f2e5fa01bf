"""Replay and verify split every frozen chunk again (docs/adr/0073, ledger_engine/checkpoint/frozen_chunks.py).

``FreezeDayChunk`` does not split: the owner states the split and the rule accepts any whose budget totals are
its listener-days' slices. So a forged chunk (one unit moved from one artist to another, another hash, another
size) is accepted live, and its history is whole by every hash. Replay and ``verify`` split its listener-days
again from the state before it and refuse it with ``CONFLICTING_EVIDENCE`` at its entry.
"""

from __future__ import annotations

import hashlib

import orjson
import pytest

from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.day_allocator import DayAllocator
from ledger_engine.application.pending import PendingBatch
from ledger_engine.checkpoint import frozen_chunks
from ledger_engine.checkpoint.export import export_store
from ledger_engine.checkpoint.integrity import verify_store
from ledger_engine.checkpoint.replay import replay_export
from ledger_engine.checkpoint.verify import VerificationError, verify_export
from ledger_engine.domain.actors import LEDGER_OWNER
from ledger_engine.domain.allocation_artifact import read_back
from ledger_engine.domain.commands.money.freeze import chunk_payload
from tests.money_allocation.world import FINANCE, FIRST_DAY, NODES, MoneyWorld

LISTENERS = {
    "listener-a": ({"work-1": 40_000, "work-3": 9_000}, {"node-1": 900, "node-2": 100}),
    "listener-b": ({"work-2": 1, "work-1": 5}, {}),
    "listener-c": ({"work-1": 7, "work-2": 11, "work-3": 13}, {"node-3": 5}),
}
DAYS = (FIRST_DAY, FIRST_DAY + 1)


@pytest.fixture
def two_days(world: MoneyWorld) -> MoneyWorld:
    """Three listeners' first two days closed, each listener in a funded 30-day budget of its own."""
    budgets = {listener: 3_000_000 + 7_919 * number for number, listener in enumerate(LISTENERS)}
    assert world.lot("lot-1", sum(budgets.values())).accepted
    for listener, budget in budgets.items():
        world.period(f"period-{listener}", listener, days=30)
        assert world.fund(f"budget-{listener}", f"period-{listener}", {"lot-1": budget}).accepted
        works, served = LISTENERS[listener]
        for day in DAYS:
            world.closed_day(listener, day, f"period-{listener}", works,
                             {node: (NODES[node], served_bytes) for node, served_bytes in served.items()})
    return world


def chunk_of(world: MoneyWorld, day: int, chunk: int, listeners: list[str]) -> tuple[dict, bytes]:
    """The payload and bytes of a chunk of ``listeners``' days, split by the day allocator from the ledger now."""
    with DayAllocator(workers=1) as allocator:
        [(content, totals, skipped)] = allocator.split_named(PendingBatch(world.owner.store), [(day, listeners)])
    assert skipped == []
    return chunk_payload("request-1", day, chunk, read_back(content)), content


def freeze(world: MoneyWorld, payload: dict) -> int:
    """Freezes the chunk as the ledger's owner; returns its sequence."""
    outcome = world.submit("FreezeDayChunk", payload, actor=LEDGER_OWNER, evidence=[payload["hash"]])
    assert outcome.accepted, outcome.result
    return outcome.sequence


def freeze_days(world: MoneyWorld, forge_chunk: int | None = None, forgery=None) -> tuple[int, list[bytes]]:
    """Both days frozen, each in two chunks (listener-a and -b, then listener-c): the four freezes follow one
    another, and the second day's name the first day's budgets. Chunk ``forge_chunk`` (of four) is changed by
    ``forgery`` before it is submitted; returns its sequence, and every chunk's bytes."""
    forged_sequence, contents = 0, []
    for number, (day, chunk, listeners) in enumerate([(day, chunk, listeners) for day in DAYS for chunk, listeners
                                                      in enumerate([["listener-a", "listener-b"], ["listener-c"]])]):
        payload, content = chunk_of(world, day, chunk, listeners)
        contents.append(content)
        if number == forge_chunk:
            forgery(payload)
        sequence = freeze(world, payload)
        if number == forge_chunk:
            forged_sequence = sequence
    return forged_sequence, contents


def exported(world: MoneyWorld, tmp_path) -> dict:
    return world.owner.with_checkpoint(lambda store: export_store(store, tmp_path / "export"))


def an_artist_paid_one_unit_more_and_another_one_less(payload: dict) -> None:
    artists = [total for total in payload["recipients"] if total["role"] == "artist"]
    artists[0]["amount"] = str(int(artists[0]["amount"]) + 1)
    artists[1]["amount"] = str(int(artists[1]["amount"]) - 1)


def another_hash(payload: dict) -> None:
    payload["hash"] = hashlib.sha256(b"other bytes").hexdigest()


def another_size(payload: dict) -> None:
    payload["size"] += 1


FORGERIES = {"recipients": an_artist_paid_one_unit_more_and_another_one_less, "hash": another_hash,
             "size": another_size}


def test_a_ledger_with_frozen_chunks_replays_and_verifies_to_the_same_state(two_days, tmp_path):
    stale, _ = chunk_of(two_days, FIRST_DAY, 0, ["listener-a", "listener-b"])
    assert two_days.allocate("listener-b", FIRST_DAY, "budget-listener-b").accepted
    refused = two_days.submit("FreezeDayChunk", stale, actor=LEDGER_OWNER, evidence=[stale["hash"]])
    assert refused.result["code"] == "ALREADY_ALLOCATED"  # journalled refused: replay does not split it
    for day, chunk, listeners in [(FIRST_DAY, 0, ["listener-a", "listener-c"]),
                                  (FIRST_DAY + 1, 0, ["listener-a", "listener-b"]),
                                  (FIRST_DAY + 1, 1, ["listener-c"])]:
        freeze(two_days, chunk_of(two_days, day, chunk, listeners)[0])
    metadata = exported(two_days, tmp_path)

    replayed = replay_export(tmp_path / "export", tmp_path / "replayed")

    assert (replayed["sequence"], replayed["logical_state_hash"]) == (metadata["sequence"],
                                                                     metadata["logical_state_hash"])
    assert verify_export(tmp_path / "export")["logical_state_hash"] == metadata["logical_state_hash"]
    assert two_days.owner.with_checkpoint(verify_store)["ok"]


def test_the_chunks_split_apart_are_the_days_artifact(two_days):
    """What replay compares with is what a build of the day makes: its chunks join to the day's artifact."""
    with DayAllocator(workers=1) as allocator:
        day = allocator.build(PendingBatch(two_days.owner.store), FIRST_DAY)
        parts = allocator.split_named(PendingBatch(two_days.owner.store),
                                      [(FIRST_DAY, ["listener-a", "listener-b"]), (FIRST_DAY, ["listener-c"])])
    assert b"".join(content for content, _, _ in parts) == day.content
    assert sum(totals.amount for _, totals, _ in parts) == day.totals.amount


@pytest.mark.parametrize("field", sorted(FORGERIES))
def test_replay_refuses_a_forged_chunk_at_its_entry_and_publishes_nothing(two_days, tmp_path, field):
    forged, _ = freeze_days(two_days, forge_chunk=2, forgery=FORGERIES[field])
    exported(two_days, tmp_path)
    before = sorted(tmp_path.iterdir())

    with pytest.raises(VerificationError) as refused:
        replay_export(tmp_path / "export", tmp_path / "replayed")

    assert (refused.value.code, refused.value.item) == ("CONFLICTING_EVIDENCE", f"journal.jsonl:{forged}")
    assert f"its {field} is not that of the split" in refused.value.reason
    assert sorted(tmp_path.iterdir()) == before, "no replayed or staging ledger is left behind"


@pytest.mark.parametrize("field", sorted(FORGERIES))
def test_verify_refuses_a_forged_chunk_at_its_entry(two_days, tmp_path, field):
    forged, _ = freeze_days(two_days, forge_chunk=1, forgery=FORGERIES[field])
    exported(two_days, tmp_path)

    for verify in (lambda: verify_export(tmp_path / "export"), lambda: two_days.owner.with_checkpoint(verify_store)):
        with pytest.raises(VerificationError) as refused:
            verify()
        assert (refused.value.code, refused.value.item) == ("CONFLICTING_EVIDENCE", f"journal.jsonl:{forged}")


def test_a_chunk_naming_a_listener_day_its_split_leaves_out_is_refused(two_days, tmp_path):
    """A listener-day allocated before the chunk: the owner's chunk names it all the same, with the revisions
    it has now. The rule refuses that (ALREADY_ALLOCATED), so the forgery is written the only way it can be:
    by a journal whose freeze the rules never saw. Here the check alone is run on the state before it."""
    payload, _ = chunk_of(two_days, FIRST_DAY, 0, ["listener-a", "listener-b"])
    assert two_days.allocate("listener-b", FIRST_DAY, "budget-listener-b").accepted
    entry = {"envelope": {"command_type": "FreezeDayChunk", "payload": payload}, "outcome": "accepted"}
    chunk = frozen_chunks.frozen_chunk("journal.jsonl:99", entry)
    with frozen_chunks.FrozenChunkCheck(allocator=DayAllocator(workers=1)) as check:
        with pytest.raises(VerificationError) as refused:
            list(check.each_checked(PendingBatch(two_days.owner.store), [(entry, chunk)]))
    assert refused.value.code == "CONFLICTING_EVIDENCE"
    assert "leaves out listener-day listener-b: ALREADY_ALLOCATED" in refused.value.reason


def test_replay_splits_a_run_of_chunks_on_the_workers_and_refuses_the_forged_one(two_days, tmp_path, monkeypatch):
    allocators = []

    def on_two_workers() -> DayAllocator:
        allocators.append(DayAllocator(workers=2, chunk_size=1))
        return allocators[-1]

    monkeypatch.setattr(frozen_chunks, "DayAllocator", on_two_workers)
    forged, _ = freeze_days(two_days, forge_chunk=1, forgery=an_artist_paid_one_unit_more_and_another_one_less)
    exported(two_days, tmp_path)

    with pytest.raises(VerificationError) as refused:
        replay_export(tmp_path / "export", tmp_path / "replayed")

    assert (refused.value.code, refused.value.item) == ("CONFLICTING_EVIDENCE", f"journal.jsonl:{forged}")
    assert allocators[-1].most_waiting > 1, "the run's listener-days were split on the workers together"


def test_a_run_ends_at_a_chunk_naming_a_budget_of_an_earlier_one(two_days, tmp_path, monkeypatch):
    """The second day's chunks expect the budgets as the first day's freezes left them: split from the state
    before the first day's, they would name older revisions. Replayed on two workers, they are split after."""
    monkeypatch.setattr(frozen_chunks, "DayAllocator", lambda: DayAllocator(workers=2, chunk_size=1))
    freeze_days(two_days)
    metadata = exported(two_days, tmp_path)

    assert replay_export(tmp_path / "export", tmp_path / "replayed")["logical_state_hash"] == \
        metadata["logical_state_hash"]
    runs = list(frozen_chunks.chunk_runs((tmp_path / "export" / "journal.jsonl").read_bytes().splitlines(),
                                         lambda line: frozen_chunks.frozen_chunk("line", orjson.loads(line))))
    assert [len(run) for run in runs][-2:] == [2, 2], "each day's two chunks are one run"


def test_stored_evidence_must_hash_to_the_chunks_hash(two_days, tmp_path):
    _, contents = freeze_days(two_days)
    exported(two_days, tmp_path)
    evidence = EvidenceStore(tmp_path / "evidence")
    for content in contents:
        evidence.put(content)
    assert replay_export(tmp_path / "export", tmp_path / "replayed", evidence=evidence)["sequence"]

    damaged = evidence.path_of(hashlib.sha256(contents[3]).hexdigest())
    damaged.chmod(0o600)
    damaged.write_bytes(contents[3] + b"\n")
    with pytest.raises(VerificationError) as refused:
        replay_export(tmp_path / "export", tmp_path / "again", evidence=evidence)
    assert refused.value.code == "CONFLICTING_EVIDENCE" and "stored evidence" in refused.value.reason
    assert not (tmp_path / "again").exists()


# Corrections of frozen listener-days: the rule holds a quote to the freeze's sentinel and totals; replay and
# verify, which recompute the chunk, hold it to the chunk's bytes.

def quote_of(content: bytes, listener_id: str, chunk: int) -> dict:
    """The listener-day's line of the chunk's bytes, as a correction quotes it."""
    line = next(orjson.loads(raw) for raw in content.splitlines() if orjson.loads(raw)["listener_id"] == listener_id)
    return {"chunk": chunk, "hash": hashlib.sha256(content).hexdigest(), **line}


def request_correction(world: MoneyWorld, quoted: dict) -> int:
    """A correction of the quoted listener-day requested, accepted live; returns its sequence."""
    outcome = world.submit("RequestCorrection", {"correction_id": "fix-1", "budget_id": quoted["budget_id"],
                                                 "reason": "allocation_error", "frozen_listener_day": quoted},
                           actor=FINANCE, evidence=[quoted["hash"]])
    assert outcome.accepted, outcome.result
    return outcome.sequence


def a_revision_one_higher(quoted: dict) -> None:
    name = sorted(quoted["revisions"])[0]
    quoted["revisions"][name] += 1


def the_lines_in_another_order(quoted: dict) -> None:
    assert len(quoted["lines"]) > 1
    quoted["lines"].reverse()


QUOTE_FORGERIES = {"revisions": a_revision_one_higher, "order": the_lines_in_another_order}


def test_an_honest_frozen_correction_replays_and_verifies(two_days, tmp_path):
    _, contents = freeze_days(two_days)
    request_correction(two_days, quote_of(contents[0], "listener-a", 0))
    assert two_days.decide_correction("fix-1").accepted
    metadata = exported(two_days, tmp_path)

    replayed = replay_export(tmp_path / "export", tmp_path / "replayed")

    assert replayed["logical_state_hash"] == metadata["logical_state_hash"]
    assert verify_export(tmp_path / "export")["logical_state_hash"] == metadata["logical_state_hash"]
    assert two_days.owner.with_checkpoint(verify_store)["ok"]


@pytest.mark.parametrize("forgery", sorted(QUOTE_FORGERIES))
def test_a_quote_that_is_not_a_line_of_its_chunk_is_refused_at_its_entry(two_days, tmp_path, forgery):
    """The forged quote names the right chunk, budget and slice and its lines total the slice: the rule, which
    cannot read the chunk's bytes, accepts it, and the history is whole by every hash."""
    _, contents = freeze_days(two_days)
    quoted = quote_of(contents[0], "listener-a", 0)
    QUOTE_FORGERIES[forgery](quoted)
    forged = request_correction(two_days, quoted)
    exported(two_days, tmp_path)

    for check in (lambda: replay_export(tmp_path / "export", tmp_path / "replayed"),
                  lambda: verify_export(tmp_path / "export"),
                  lambda: two_days.owner.with_checkpoint(verify_store)):
        with pytest.raises(VerificationError) as refused:
            check()
        assert (refused.value.code, refused.value.item) == ("CONFLICTING_EVIDENCE", f"journal.jsonl:{forged}")
        assert "its quote is not a line of chunk 0" in refused.value.reason
    assert not (tmp_path / "replayed").exists()


def test_a_quote_of_a_chunk_not_recomputed_is_held_to_its_stored_bytes(two_days, tmp_path):
    """A replay from a checkpoint does not recompute the chunks frozen before it: the evidence store's bytes
    stand for them, and without them the quote cannot be held to anything."""
    _, contents = freeze_days(two_days)
    honest = quote_of(contents[0], "listener-a", 0)
    forged = quote_of(contents[0], "listener-a", 0)
    a_revision_one_higher(forged)
    evidence = EvidenceStore(tmp_path / "evidence")
    evidence.put(contents[0])

    def entry(quoted: dict) -> dict:
        return {"envelope": {"command_type": "RequestCorrection", "payload": {"frozen_listener_day": quoted}},
                "outcome": "accepted"}

    with frozen_chunks.FrozenChunkCheck(evidence=evidence, allocator=DayAllocator(workers=1)) as check:
        check.require_quote("journal.jsonl:99", entry(honest))
        with pytest.raises(VerificationError) as refused:
            check.require_quote("journal.jsonl:99", entry(forged))
        assert "its quote is not a line of chunk 0" in refused.value.reason
    with frozen_chunks.FrozenChunkCheck(allocator=DayAllocator(workers=1)) as check:
        with pytest.raises(VerificationError) as refused:
            check.require_quote("journal.jsonl:99", entry(honest))
        assert refused.value.code == "CONFLICTING_EVIDENCE" and "no evidence store" in refused.value.reason
