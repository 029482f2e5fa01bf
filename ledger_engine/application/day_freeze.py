"""The owner's day loop: a day allocation request split on every core and frozen chunk by chunk (docs/adr/0073).

Finance asks with ``AllocateDay`` (commands/money/allocate_day.py); whoever
owns the ledger runs the request here, in its own process. For each day not
done yet:

1. The day is split by the day allocator, whose reads run at a command boundary
   (``LedgerOwner.at_boundary``), so the artifact is the state between two
   commands; the workers split it in other processes. The same read gives the
   day's next free chunk number and the chunks this request froze already.
2. The artifact's lines are cut, in order, into chunks of at most
   ``MAX_CHUNK_LISTENER_DAYS`` (fewer when a chunk's command would pass the
   envelope bound). Each chunk's bytes go into the evidence store, then its
   ``FreezeDayChunk`` is submitted as the ledger's own actor.
3. A chunk refused because what it was split from has changed since
   (``STALE_REVISION``, its number taken, a listener-day allocated meanwhile)
   has its listener-days read and split again, up to ``MAX_SPLITS`` times for
   the day. A listener-day the split or the freeze refuses for any other
   reason, or still stale after the last split, is held: never frozen, and
   named in the request's result with the code that refused it. One that is
   allocated already (by ``AllocateListenerDay``, or frozen before a restart)
   is skipped: the allocation sentinel stands for it.
4. Progress goes into the ledger (``RecordDayAllocationProgress``): each chunk
   frozen, the listener-days split and held, the day done. A restarted owner
   continues every request that is not ``done`` (``unfinished_requests``): it
   counts a chunk frozen for the request before the stop that the request's
   record does not count yet, and splits the day again, in which every frozen
   listener-day is skipped, so nothing is frozen twice.

Days are split one after the other, each once the one before is frozen: a
freeze writes the budgets of its listener-days, and the next day's
listener-days name those budgets at the revisions they read, so a day split
while the day before it is being frozen would be stale throughout.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator, Protocol, Sequence

import orjson

from ledger_engine.application.day_allocator import DayAllocator, DaySplitting, Skipped
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.pending import PendingBatch
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.canonical import canonical_bytes
from ledger_engine.domain.allocation_artifact import ArtifactChunk, DayTotals, read_back
from ledger_engine.domain.commands.money.allocate_day import (
    DONE, MAX_PROGRESS_REFUSALS, day_allocation_key,
)
from ledger_engine.domain.commands.money.freeze import chunk_payload
from ledger_engine.domain.day_lines import MAX_CHUNK_LISTENER_DAYS
from ledger_engine.domain.schema.money_allocation import DayAllocation
from ledger_engine.envelope import MAX_ENVELOPE_BYTES
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import key, seq20
from ledger_engine.layout import STATE
from ledger_engine.open_json import Report, Unvalidated
from ledger_engine.storage.rocks import RocksStore

log = logging.getLogger("porto.day_freeze")

MAX_SPLITS = 4  # splits of one day: the first, and the re-splits of chunks refused as stale
# Refusals that say what the chunk was split from has changed: its listener-days are read and split again.
SPLIT_AGAIN = frozenset({ErrorCode.STALE_REVISION, ErrorCode.ALREADY_EXISTS, ErrorCode.ALREADY_ALLOCATED})
ENVELOPE_ROOM = 4_096  # the envelope's own fields around a chunk's payload, with room to spare
ProgressListener = Callable[[Report], None]


class Evidence(Protocol):
    """Where a chunk's bytes are stored before its command: the gateway's ``EvidenceStore``."""

    def put(self, data: bytes) -> str: ...


_running: set[tuple[str, str]] = set()  # (ledger directory, request ID) of the requests this process runs
_running_lock = threading.Lock()


@dataclass(frozen=True)
class DaySplit:
    """A day's listener-days (or those named) split at one command boundary, and the day's chunks then."""

    parts: list[ArtifactChunk]  # artifact lines in listener-day key order, in runs as the workers split them
    skipped: tuple[Skipped, ...]
    chunks: dict[int, str]  # chunk number -> the request that froze it

    @property
    def listener_days(self) -> int:
        return sum(len(part.listener_days) for part in self.parts)

    @property
    def next_chunk(self) -> int:
        return max(self.chunks, default=-1) + 1


@dataclass(frozen=True)
class ReadAhead:
    """A day read whole at a command boundary, with its chunks then, being split on the workers meanwhile."""

    day: int
    splitting: DaySplitting
    chunks: dict[int, str]


@dataclass
class DayFreezer:
    """Runs day allocation requests to the end on ``owner``, its allocator's workers splitting each day."""

    owner: LedgerOwner
    evidence: Evidence
    allocator: DayAllocator
    chunk_size: int = MAX_CHUNK_LISTENER_DAYS
    on_progress: ProgressListener = field(default=lambda summary: None)

    def run(self, request_id: str) -> DayAllocation:
        """Allocate every day of the request not done yet, each day split while the one before it is frozen;
        the request's record once it is ``done``."""
        with _running_alone(self.owner, request_id):
            days = [entry for entry in self._request(request_id)["days"] if entry["status"] != DONE]
            ahead = self._read_ahead(days[0]["day"]) if days else None
            for entry, following in zip(days, [*days[1:], None]):
                assert ahead is not None, "each day is read ahead before its turn"
                split = self._collect(ahead)
                ahead = self._read_ahead(following["day"]) if following else None
                self._freeze_day(request_id, entry["day"], set(entry["chunks"]), split)
            return self._request(request_id)

    def _request(self, request_id: str) -> DayAllocation:
        record = self.owner.get(STATE, day_allocation_key(request_id))
        if record is None:
            raise LedgerError(ErrorCode.NOT_FOUND, f"no day allocation {request_id}")
        return record.data_as(DayAllocation)

    def _read_ahead(self, day: int) -> ReadAhead:
        """At a command boundary: the day read whole and handed to the workers, and its chunks so far."""
        def read(store: RocksStore) -> ReadAhead:
            view = PendingBatch(store)
            return ReadAhead(day, self.allocator.start(view, day), _day_chunks(view, day))
        return self.owner.at_boundary(read)

    def _collect(self, ahead: ReadAhead) -> DaySplit:
        """The day read ahead, split; read and split again at a command boundary if a worker died meanwhile."""
        try:
            parts = ahead.splitting.parts()
        except BrokenProcessPool:
            return self.owner.at_boundary(lambda store: self._split(store, ahead.day, None))
        return DaySplit([part for part, _ in parts], tuple(entry for _, skipped in parts for entry in skipped),
                        ahead.chunks)

    def _freeze_day(self, request_id: str, day: int, counted: set[int], split: DaySplit) -> None:
        held: dict[str, Skipped] = {}  # listener-days not frozen, with the code that refused each
        for attempt in range(MAX_SPLITS):
            if attempt:
                split = self.owner.at_boundary(lambda store: self._split(store, day, stale))
            # Chunks frozen for this request before a stop and not counted yet are counted with the split.
            ours = sorted(chunk for chunk, owner in split.chunks.items() if owner == request_id and chunk not in counted)
            self._record(request_id, day, split=split.listener_days, chunks=ours)
            counted.update(ours)
            held.update({skipped.listener_id: skipped for skipped in split.skipped
                         if skipped.code != ErrorCode.ALREADY_ALLOCATED})  # allocated: its sentinel stands for it
            stale = self._freeze_split(request_id, day, split, held, counted)
            if not stale:
                break
        else:
            held.update({listener_id: Skipped(listener_id, str(ErrorCode.STALE_REVISION),
                                              f"still stale after {MAX_SPLITS} splits") for listener_id in stale})
        self._record(request_id, day, refused=[held[listener_id] for listener_id in sorted(held)], day_done=True)

    def _split(self, store: RocksStore, day: int, named: list[str] | None) -> DaySplit:
        """At a command boundary: the day's artifact (or that of ``named`` listener-days) and its chunks so far."""
        view = PendingBatch(store)
        skipped: Sequence[Skipped]
        if named is None:
            artifact = self.allocator.build(view, day)
            content, skipped = artifact.content, artifact.skipped
        else:
            content, _, skipped = self.allocator.split_named(view, [(day, named)])[0]
        return DaySplit([read_back(content)], tuple(skipped), _day_chunks(view, day))

    def _freeze_split(self, request_id: str, day: int, split: DaySplit, held: dict[str, Skipped],
                      counted: set[int]) -> list[str]:
        """Freeze the split's chunks in order; the listener-days of those refused as stale, to split again."""
        stale = []
        for run, payload in self._chunks(request_id, day, split, held):
            outcome = self._freeze_chunk(run, payload)
            listener_ids = [listener_day["listener_id"] for listener_day in run.listener_days]
            if outcome.accepted:
                self._record(request_id, day, chunks=[payload["chunk"]])
                counted.add(payload["chunk"])
            elif outcome.code in SPLIT_AGAIN:
                stale += listener_ids
            else:
                detail = outcome.result.get("detail", "")
                held.update({listener_id: Skipped(listener_id, outcome.code, detail) for listener_id in listener_ids})
        return stale

    def _chunks(self, request_id: str, day: int, split: DaySplit, held: dict[str, Skipped]
                ) -> Iterator[tuple[ArtifactChunk, Unvalidated]]:
        """The split's lines in runs of at most ``chunk_size``, numbered from the day's next chunk, each with its
        payload; a run whose command would pass the envelope bound is halved until it fits, and a listener-day
        whose command alone would not fit is held."""
        waiting, number = list(_runs(split.parts, self.chunk_size))[::-1], split.next_chunk
        while waiting:
            run = waiting.pop()
            payload = chunk_payload(request_id, day, number, run)
            if len(canonical_bytes(payload)) + ENVELOPE_ROOM <= MAX_ENVELOPE_BYTES:
                yield run, payload
                number += 1
            elif len(run.listener_days) > 1:
                half = len(run.listener_days) // 2
                waiting += [_lines(run, half, len(run.listener_days)), _lines(run, 0, half)]
            else:
                listener_id = run.listener_days[0]["listener_id"]
                held[listener_id] = Skipped(listener_id, str(ErrorCode.COMMAND_TOO_LARGE),
                                            f"its chunk's command alone is over the {MAX_ENVELOPE_BYTES}-byte bound")

    def _freeze_chunk(self, run: ArtifactChunk, payload: Unvalidated) -> CommandOutcome:
        self.evidence.put(run.content)  # before the command that cites it
        return self.owner.submit_own("FreezeDayChunk", payload, evidence_hashes=[payload["hash"]])

    def _record(self, request_id: str, day: int, *, split: int = 0, chunks: Sequence[int] = (),
                refused: Sequence[Skipped] = (), day_done: bool = False) -> None:
        """``RecordDayAllocationProgress``, the held listener-days in as many commands as their bound needs."""
        batches = [refused[start:start + MAX_PROGRESS_REFUSALS]
                   for start in range(0, len(refused), MAX_PROGRESS_REFUSALS)] or [[]]
        for number, batch in enumerate(batches):
            last = number == len(batches) - 1
            payload = progress_payload(request_id, day, split=split if number == 0 else 0,
                                       chunks=chunks if number == 0 else (), refused=batch, day_done=day_done and last)
            outcome = self.owner.submit_own("RecordDayAllocationProgress", payload)
            if not outcome.accepted:
                raise LedgerError(ErrorCode(outcome.code), f"the progress of {request_id} on day {day} was refused: "
                                                           f"{outcome.result.get('detail', '')}")
            self.on_progress({"day": day, **outcome.result["data"]})


def progress_payload(request_id: str, day: int, *, split: int = 0, chunks: Sequence[int] = (),
                     refused: Sequence[Skipped] = (), day_done: bool = False) -> Unvalidated:
    """A ``RecordDayAllocationProgress`` payload; each held listener-day's detail cut to the rule's bound."""
    return {"request_id": request_id, "day": day, "listener_days_split": split, "chunks": list(chunks),
            "refused": [{"listener_id": entry.listener_id, "code": entry.code, "detail": entry.detail[:500]}
                        for entry in refused], "day_done": day_done}


@contextmanager
def _running_alone(owner: LedgerOwner, request_id: str) -> Iterator[None]:
    """One loop at a time runs a request in this process (the only one that owns the ledger)."""
    running = (str(owner.path), request_id)
    with _running_lock:
        if running in _running:
            raise LedgerError(ErrorCode.INVALID_STATE, f"day allocation {request_id} is already running")
        _running.add(running)
    try:
        yield
    finally:
        with _running_lock:
            _running.discard(running)


def _day_chunks(view: PendingBatch, day: int) -> dict[int, str]:
    """The day's frozen chunks: number -> the request that froze it."""
    prefix = key("day_chunk", seq20(day)) + "/"
    return {int(chunk_key[len(prefix):]): record.data["request_id"] for chunk_key, record in view.scan(STATE, prefix)}


def _runs(parts: list[ArtifactChunk], size: int) -> Iterator[ArtifactChunk]:
    """The parts' lines in runs of ``size`` (the last shorter); a run made of whole parts adds up their totals
    instead of reading its lines back."""
    run: list[ArtifactChunk] = []
    length = 0
    for part in parts:
        start = 0
        while start < len(part.listener_days):
            stop = min(start + size - length, len(part.listener_days))
            run.append(part if stop - start == len(part.listener_days) else _lines(part, start, stop))
            length += stop - start
            start = stop
            if length == size:
                yield _joined(run)
                run, length = [], 0
    if run:
        yield _joined(run)


def _lines(chunk: ArtifactChunk, start: int, stop: int) -> ArtifactChunk:
    return read_back(b"".join(chunk.content.splitlines(keepends=True)[start:stop]))


def _joined(runs: list[ArtifactChunk]) -> ArtifactChunk:
    if len(runs) == 1:
        return runs[0]
    totals = DayTotals()
    for run in runs:
        totals.merge(run.totals)
    return ArtifactChunk(b"".join(run.content for run in runs), totals,
                         [listener_day for run in runs for listener_day in run.listener_days])


def unfinished_requests(owner: LedgerOwner) -> list[str]:
    """The day allocation requests not ``done``, in request ID order."""
    return owner.at_boundary(lambda store: [record.data["request_id"] for _, record in PendingBatch(store).scan(
        STATE, "day_allocation/") if record.data["status"] != DONE])


def run_requests(owner: LedgerOwner, evidence: Evidence, request_ids: list[str], *, workers: int | None = None,
                 on_progress: ProgressListener = lambda summary: None) -> list[DayAllocation]:
    """Run each request to the end with a day allocator of its own; each request's record once done."""
    with DayAllocator(workers=workers) as allocator:
        freezer = DayFreezer(owner, evidence, allocator, on_progress=on_progress)
        return [freezer.run(request_id) for request_id in request_ids]


def start_in_background(owner: LedgerOwner, evidence: Evidence, request_id: str | None = None, *,
                        workers: int | None = None) -> threading.Thread:
    """A daemon thread running ``request_id``, or with none every request not done (on opening the ledger). A
    failure is logged; the request stays unfinished and is continued the next time the ledger is opened."""
    def run() -> None:
        try:
            run_requests(owner, evidence, [request_id] if request_id else unfinished_requests(owner), workers=workers)
        except Exception:
            log.exception("day allocation %s stopped; it continues when the ledger is next opened", request_id or "")
    thread = threading.Thread(target=run, name=f"day-allocation-{request_id or 'unfinished'}", daemon=True)
    thread.start()
    return thread
