"""The day allocator: one UTC day's allocatable listener-days, split on every core into one artifact.

It reads outside the executor: the day's listener-days (named by the
``day_closed`` index, so a day's reads do not grow with the history, then
each read from its record) and the records each split needs (budget, period,
rights versions, policy), as stored bytes. Worker processes decode them and
run the checks and the split of the ``AllocateListenerDay`` rule in the
rule's order (the plan, the day's allocation sentinel, the budget's
unallocated funds), so a listener-day that rule would refuse is skipped with
the code the rule would give it. The reads need not be isolated (RocksDB
iteration here is not): every artifact line names the revisions an
allocation of it expects, and whatever freezes the artifact expects them.
The index is no authority: a listener-day it missed is only left for a later
build.

Chunks are joined in listener-day key order, so the bytes do not depend on
the number of workers or the chunk size (docs/adr/0069). Workers start from a
fork server, never from the ledger's own process with its RocksDB threads. A
build outlives one worker's death (while it runs, or before it, while the
allocator was idle): it starts new workers and builds again from a new read.
A second death in the same build fails it whole.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import select
import threading
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Iterator, Protocol

from ledger_engine.application.pending import PendingBatch
from ledger_engine.storage.value_codec import decode_record
from ledger_engine.domain.allocation_artifact import ArtifactChunk, DayTotals, artifact_chunk
from ledger_engine.domain.allocation_policy import PlannedLine
from ledger_engine.domain.changes import Rejected, require
from ledger_engine.domain.commands.money.allocation import (
    POLICY_KEY, ListenerDayInputs, already_allocated, listener_day_inputs, require_slice_funded,
)
from ledger_engine.domain.schema.money_allocation import (
    Budget, allocation_sentinel_key, budget_key, funding_sentinel_key,
)
from ledger_engine.domain.schema.streaming import listener_day_key, period_key, rights_key
from ledger_engine.domain.view import Record
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import key, seq20
from ledger_engine.layout import INDEXES, STATE, UNIQUE
from ledger_engine.ordered import chunks

CHUNK_SIZE = 500
AHEAD = 2  # chunks waiting per worker: one being split, one ready for when it is done
# The owner's one executor runs every command the ledger takes, the freeze of the day before among them; the
# workers split in the background and take what CPU it leaves (nice(2): 10 is a tenth of its weight).
WORKER_NICENESS = 10
Address = tuple[str, str]  # (family, key)
Job = tuple[int, list["_Candidate | Skipped"], dict[Address, "bytes | None"]]  # a day, a chunk, its shared records
Part = tuple[ArtifactChunk, list["Skipped"]]  # a chunk split: its artifact lines, and its listener-days left out


class RawReader(Protocol):
    """What reading named listener-days takes: stored bytes by key (a ``PendingBatch``, or a replay's fold)."""

    def get_raw(self, family: str, key: bytes) -> bytes | None: ...


@dataclass(frozen=True)
class Skipped:
    """A listener-day of the day that is not in the artifact, with the code its allocation would get."""

    listener_id: str
    code: str
    detail: str


def unfunded(listener_id: str, period_id: str) -> Skipped:
    """A listener-day whose period no budget funds: nothing to allocate it from."""
    return Skipped(listener_id, str(ErrorCode.NOT_FOUND), f"period {period_id} has no budget")


@dataclass(frozen=True)
class _Candidate:
    """One listener-day and, as stored, every record its allocation reads that the day's others do not share."""

    listener_id: str
    budget_id: str
    records: dict[Address, bytes | None]
    shared: tuple[Address, ...]  # the rights versions and the policy, read once for the day


@dataclass(frozen=True)
class DayArtifact:
    day: int
    content: bytes
    digest: str  # SHA-256 of ``content``, hex
    totals: DayTotals
    skipped: tuple[Skipped, ...]


class DayAllocator:
    """Builds day artifacts; its worker processes start with the first build that needs them and live until ``close``."""

    def __init__(self, workers: int | None = None, chunk_size: int = CHUNK_SIZE) -> None:
        self.workers = workers if workers is not None else len(os.sched_getaffinity(0))
        self.chunk_size = chunk_size
        self.most_waiting = 0  # the most chunks sent to the workers and not yet collected, over all builds
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> "DayAllocator":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def build(self, store: PendingBatch, day: int) -> DayArtifact:
        """The artifact of ``day`` as the store reads now (``PendingBatch`` for its raw reads and scans).

        Chunks go to the workers as they are read, at most ``AHEAD`` per worker waiting, so reading and
        splitting overlap and the parent holds a bounded part of the day's inputs. A build outlives one
        worker's death, whenever it happens: it starts new workers and reads the day again. A second
        death in the same build fails it.
        """
        if self.workers == 1:
            read = _read(store, day, self.chunk_size)
            content, totals, skipped = _joined(_split_chunk(day, chunk, needed) for chunk, needed in read)
        else:
            content, totals, skipped = self._split_surviving_one_death(store, day)
        return DayArtifact(day, content, hashlib.sha256(content).hexdigest(), totals, tuple(skipped))

    def start(self, store: PendingBatch, day: int) -> "DaySplitting":
        """Read ``day`` whole now, from ``store`` (at the caller's command boundary), and split it on the workers
        while the caller goes on: the owner freezes one day while the next is split (docs/adr/0073)."""
        jobs = list(_jobs(day, _read(store, day, self.chunk_size)))
        pool = self._started_workers()
        return DaySplitting(self, [pool.submit(_split_chunk, *job) for job in jobs])

    def _split_surviving_one_death(self, store: PendingBatch, day: int) -> tuple[bytes, DayTotals, list[Skipped]]:
        try:
            return _joined(self._split_on_workers(_jobs(day, _read(store, day, self.chunk_size))))
        except BrokenProcessPool:  # a worker died, during this build or before it: new workers, a new read
            return _joined(self._split_on_workers(_jobs(day, _read(store, day, self.chunk_size))))

    def split_named(self, store: RawReader, named: list[tuple[int, list[str]]]
                    ) -> list[tuple[bytes, DayTotals, list[Skipped]]]:
        """Each (day, listener IDs) of ``named`` split as a build splits its day, read from ``store`` now: the
        artifact bytes, totals and skipped listener-days of each, in order. Their chunks go to the workers
        together, as they are read (split here when they make one chunk, or there is one worker)."""
        counts: list[int] = []  # chunks per (day, listener IDs), known once all are read

        def jobs() -> Iterator[Job]:
            counts.clear()
            for day, listener_ids in named:
                counts.append(0)
                for job in _jobs(day, _read_named(store, day, listener_ids, self.chunk_size)):
                    counts[-1] += 1
                    yield job

        if self.workers == 1 or sum(len(listener_ids) for _, listener_ids in named) <= self.chunk_size:
            results = [_split_chunk(*job) for job in jobs()]
        else:
            try:
                results = list(self._split_on_workers(jobs()))
            except BrokenProcessPool:  # a worker died: new workers, a new read
                results = list(self._split_on_workers(jobs()))
        joined, start = [], 0
        for count in counts:
            joined.append(_joined(iter(results[start:start + count])))
            start += count
        return joined

    def _split_on_workers(self, jobs: Iterator[Job]) -> Iterator[Part]:
        """The chunks' results in order; a worker's death breaks the pool, which the next attempt replaces."""
        pool, waiting = self._started_workers(), deque[Future[Part]]()
        try:
            for day, chunk, needed in jobs:
                waiting.append(pool.submit(_split_chunk, day, chunk, needed))
                self.most_waiting = max(self.most_waiting, len(waiting))
                if len(waiting) >= AHEAD * self.workers:
                    yield waiting.popleft().result()
            while waiting:
                yield waiting.popleft().result()
        except BrokenProcessPool:
            self.workers_died()
            raise
        finally:
            for future in waiting:
                future.cancel()

    def workers_died(self) -> None:
        """The pool is broken: the next build starts new workers."""
        self._pool = None

    def _started_workers(self) -> ProcessPoolExecutor:
        """The pool, with every worker started before any chunk is sent to it."""
        if self._pool is not None:
            return self._pool
        pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("forkserver"),
                                   initializer=_worker_started, initargs=(os.getpid(),))
        try:
            # The pool starts a worker per task while none is idle: one task each starts them all now, so no
            # worker is started mid-build, when a dying one could break the pool under a starting one.
            for future in [pool.submit(os.getpid) for _ in range(self.workers)]:
                future.result()
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
        self._pool = pool
        return pool


class DaySplitting:
    """A day read whole and being split on the workers (``DayAllocator.start``)."""

    def __init__(self, allocator: DayAllocator, futures: list[Future[Part]]) -> None:
        self.allocator, self.futures = allocator, futures

    def parts(self) -> list[Part]:
        """The day's split chunks in listener-day key order, once every one is done. ``BrokenProcessPool`` if a
        worker died: the allocator starts new workers for its next build, and the day must be read again."""
        try:
            return [future.result() for future in self.futures]
        except BrokenProcessPool:
            self.allocator.workers_died()
            for future in self.futures:
                future.cancel()
            raise


def _worker_started(owner_pid: int) -> None:
    """In a worker: yield the cores to the owner whenever it wants one, and end with it."""
    os.nice(WORKER_NICENESS)
    _end_with_owner(owner_pid)


def _end_with_owner(owner_pid: int) -> None:
    """In a worker: end when the process that owns the ledger ends, killed or not. Its fork server would not:
    every worker it starts holds the server's own liveness pipe, so the server, and with it each worker and
    what they inherited (the owner's output, its share of the cores), would outlive a killed owner."""
    try:
        owner = os.pidfd_open(owner_pid)
    except ProcessLookupError:
        os._exit(1)

    def wait_for_owner() -> None:
        select.select([owner], [], [])
        os._exit(1)

    threading.Thread(target=wait_for_owner, name="end-with-owner", daemon=True).start()


def _read(store: PendingBatch, day: int, chunk_size: int
          ) -> Iterator[tuple[list[_Candidate | Skipped], dict[Address, bytes | None]]]:
    """The day's candidates in chunks, each with the shared records it reads."""
    shared: dict[Address, bytes | None] = {}
    for chunk in chunks(day_candidates(store, day, shared), chunk_size):
        yield chunk, _needed(chunk, shared)


def _read_named(store: RawReader, day: int, listener_ids: list[str], chunk_size: int
                ) -> Iterator[tuple[list[_Candidate | Skipped], dict[Address, bytes | None]]]:
    """Named listener-days of ``day`` in chunks, read as ``_read`` reads the day's."""
    shared: dict[Address, bytes | None] = {}
    for chunk in chunks(named_candidates(store, day, listener_ids, shared), chunk_size):
        yield chunk, _needed(chunk, shared)


def _jobs(day: int, read: Iterator[tuple[list[_Candidate | Skipped], dict[Address, bytes | None]]]) -> Iterator[Job]:
    for chunk, needed in read:
        yield day, chunk, needed


def _joined(results: Iterator[Part]) -> tuple[bytes, DayTotals, list[Skipped]]:
    parts, totals, skipped = [], DayTotals(), []
    for chunk, chunk_skipped in results:
        parts.append(chunk.content)
        totals.merge(chunk.totals)
        skipped += chunk_skipped
    return b"".join(parts), totals, skipped


def _needed(chunk: list[_Candidate | Skipped], shared: dict[Address, bytes | None]) -> dict[Address, bytes | None]:
    """The shared records a chunk reads: a worker gets those, not every work's rights."""
    return {address: shared[address] for candidate in chunk if isinstance(candidate, _Candidate)
            for address in candidate.shared}


def _split_chunk(day: int, chunk: list[_Candidate | Skipped], shared: dict[Address, bytes | None]) -> Part:
    """In a worker: decode, check and split a chunk's listener-days; skipped ones pass through."""
    planned, skipped, decoded_shared = [], [], _StoredRecords(shared)
    for candidate in chunk:
        if isinstance(candidate, Skipped):
            skipped.append(candidate)
            continue
        try:
            planned.append(_plan(_StoredRecords(candidate.records, decoded_shared), candidate, day))
        except (Rejected, LedgerError) as refused:  # the rule journals either as its rejection
            skipped.append(Skipped(candidate.listener_id, str(refused.code), refused.detail))
    return artifact_chunk(planned), skipped


def _plan(view: "_StoredRecords", candidate: _Candidate, day: int) -> tuple[ListenerDayInputs, list[PlannedLine]]:
    """The rule's own checks in the rule's order: the plan (reads, then the split), the day's sentinel, the funds."""
    inputs = listener_day_inputs(view, candidate.listener_id, day, candidate.budget_id)
    lines = inputs.split()
    require(view.get(UNIQUE, allocation_sentinel_key(candidate.listener_id, day)) is None, ErrorCode.ALREADY_ALLOCATED,
            already_allocated(candidate.listener_id, day))
    budget = view.get(STATE, budget_key(candidate.budget_id))
    assert budget is not None, "the plan read it"
    require_slice_funded(budget.data_as(Budget), candidate.budget_id, inputs.slice_amount)
    return inputs, lines


class _StoredRecords:
    """A read-only view over records the parent read, each decoded once; reading anything else is a bug."""

    def __init__(self, records: dict[Address, bytes | None], shared: "_StoredRecords | None" = None) -> None:
        self.records, self.shared = records, shared
        self.decoded: dict[Address, Record | None] = {}

    def get(self, family: str, key: str) -> Record | None:
        address = (family, key)
        if address not in self.records:
            assert self.shared is not None, address
            return self.shared.get(family, key)
        if address not in self.decoded:
            raw = self.records[address]
            self.decoded[address] = decode_record(raw) if raw is not None else None
        return self.decoded[address]

    def scan(self, family: str, prefix: str) -> Iterator[tuple[str, Record]]:
        raise AssertionError(f"a split scans nothing; it scanned {family} {prefix!r}")


def day_candidates(store: PendingBatch, day: int, shared: dict[Address, bytes | None]
                   ) -> Iterator[_Candidate | Skipped]:
    """The day's listener-days in key order, each with the records it reads; what they all read goes in ``shared``."""
    prefix = (key("day_closed", seq20(day)) + "/").encode()
    listeners = [index_key[len(prefix):].decode() for index_key, _ in store.scan_raw(INDEXES, prefix)]
    return named_candidates(store, day, listeners, shared)


def named_candidates(store: RawReader, day: int, listeners: list[str], shared: dict[Address, bytes | None]
                     ) -> Iterator[_Candidate | Skipped]:
    """``day_candidates`` of the named listeners' days; one that does not exist is left out."""
    shared[(STATE, POLICY_KEY)] = _raw(store, POLICY_KEY)
    rights_addresses = _RightsAddresses()
    for day_key in sorted(listener_day_key(listener_id, day) for listener_id in listeners):
        raw = _raw(store, day_key)
        if raw is not None:
            yield _candidate(store, day, day_key, raw, shared, rights_addresses)


class _RightsAddresses(dict[tuple[str, int], Address]):
    """The address of each rights version the day's works name, its key built once: a day names each
    version in many listenings (the benchmark city's day, 20 versions in 200,000), and building a key for
    each listening was a third of the reading's CPU. Only the reading uses these; the workers build every
    key again in the rule's own code."""

    def __missing__(self, version: tuple[str, int]) -> Address:
        address = self[version] = (STATE, rights_key(*version))
        return address


def _candidate(store: RawReader, day: int, day_key: str, raw: bytes,
               shared: dict[Address, bytes | None], rights_addresses: _RightsAddresses) -> _Candidate | Skipped:
    listener_day = decode_record(raw).data
    listener_id, period_id = listener_day["listener_id"], listener_day["period_id"]
    funding = store.get_raw(UNIQUE, funding_sentinel_key(period_id, 1).encode())
    if funding is None:
        return unfunded(listener_id, period_id)
    budget_id = decode_record(funding).data["budget_id"]
    sentinel = allocation_sentinel_key(listener_id, day)
    budget = _raw(store, budget_key(budget_id))
    records = {(STATE, day_key): raw, (STATE, budget_key(budget_id)): budget,
               (UNIQUE, sentinel): store.get_raw(UNIQUE, sentinel.encode())}
    if budget is not None:
        period = period_key(decode_record(budget).data["period_id"])
        records[(STATE, period)] = _raw(store, period)
    reads = [(STATE, POLICY_KEY)]
    for work in listener_day["works"]:
        rights = rights_addresses[(work["work_id"], work["rights_version"])]
        if rights not in shared:
            shared[rights] = _raw(store, rights[1])
        reads.append(rights)
    return _Candidate(listener_id, budget_id, records, tuple(reads))


def _raw(store: RawReader, state_key: str) -> bytes | None:
    return store.get_raw(STATE, state_key.encode())
