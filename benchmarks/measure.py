"""Timing: the raw RocksDB floor, rounds interleaved with it, and a probe on a store's batches.

The machines are noisy and shared, so an absolute rate alone says little. Every
speed is measured in rounds that alternate the floor with the engine, and the
ratio is taken per round, where both saw the same machine.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from benchmarks.report import Report
from ledger_engine.application import executor as executor_module
from ledger_engine.layout import STATE
from ledger_engine.storage.rocks import RocksStore, WriteOp, raw_sync_write_rate

# raw_sync_write_rate's keys: b"bench/" + 20 digits.
FLOOR_PREFIX = b"bench/"
FLOOR_KEY_BYTES = len(FLOOR_PREFIX) + 20
FLOOR_WRITES = 1_000


def seconds(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


@dataclass
class ExecuteCpu:
    """The leader thread's CPU in each command's ``execute``, by command type (µs), and how many ran."""

    us: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[str, int] = field(default_factory=lambda: defaultdict(int))


@contextmanager
def execute_cpu_timed() -> Iterator[ExecuteCpu]:
    """Time every ``execute`` the executor runs while the block runs, in the calling thread's CPU clock (two clock
    reads a command, about 1 µs, which a wait for the GIL or the disk does not advance)."""
    untimed, spent = executor_module.execute, ExecuteCpu()

    def timed(command, *args, **kwargs):
        started = time.thread_time()
        try:
            return untimed(command, *args, **kwargs)
        finally:
            spent.us[command.envelope.command_type] += (time.thread_time() - started) * 1e6
            spent.counts[command.envelope.command_type] += 1

    executor_module.execute = timed
    try:
        yield spent
    finally:
        executor_module.execute = untimed


def batch_bytes(ops: Iterable[WriteOp]) -> int:
    """Key plus value bytes of one batch, the size a floor write copies."""
    return sum(len(key) + len(value or b"") for _, key, value in ops)


class Floor:
    """Synchronous single-put batches (WAL on, sync) as large as one engine command's batch.

    Each measurement writes into a fresh database under ``workdir`` and then
    counts the keys it wrote back; ``verify`` checks that none went missing.
    """

    def __init__(self, workdir: Path, batch_size: int, writes: int = FLOOR_WRITES) -> None:
        self.workdir = workdir
        self.batch_size = batch_size
        self.writes = writes
        self.measurements = 0
        self.read_back = 0

    def _fresh_path(self, kind: str) -> Path:
        return self.workdir / f"floor-{kind}-{self.measurements}"

    def rocksstore_rate(self) -> float:
        """Through ``RocksStore.write``, the call the engine's executor makes."""
        path = self._fresh_path("rocksstore")
        rate = raw_sync_write_rate(path, payload_bytes=self.batch_size - FLOOR_KEY_BYTES, writes=self.writes)
        with RocksStore(path, read_only=True) as store:
            written = sum(1 for _ in store.scan(STATE, FLOOR_PREFIX))
        self._count(written)
        return rate

    def batched_rate(self, per_batch: int) -> float:
        """Puts per second through ``RocksStore.write`` in synchronous batches of ``per_batch`` puts, each
        put as large as one command's batch: the floor for a group commit of ``per_batch`` commands."""
        path = self._fresh_path(f"batched-{per_batch}")
        body = b"x" * (self.batch_size - FLOOR_KEY_BYTES)
        with RocksStore(path, create=True) as store:
            started = time.perf_counter()
            for first in range(0, self.writes, per_batch):
                store.write([(STATE, FLOOR_PREFIX + b"%020d" % number, body)
                             for number in range(first, min(first + per_batch, self.writes))])
            elapsed = time.perf_counter() - started
            written = sum(1 for _ in store.scan(STATE, FLOOR_PREFIX))
        self._count(written)
        return self.writes / elapsed

    def rocksdict_rate(self) -> float:
        """Straight through rocksdict, with nothing of the engine in between."""
        db = Rdict(str(self._fresh_path("rocksdict")), Options(raw_mode=True))
        sync = WriteOptions()
        sync.sync = True
        body = b"x" * (self.batch_size - FLOOR_KEY_BYTES)
        started = time.perf_counter()
        for number in range(self.writes):
            batch = WriteBatch(raw_mode=True)
            batch.put(FLOOR_PREFIX + b"%020d" % number, body)
            db.write(batch, sync)
        elapsed = time.perf_counter() - started
        written = sum(1 for _ in db.keys())
        db.close()
        self._count(written)
        return self.writes / elapsed

    def verify(self, report: Report) -> None:
        report.check(self.read_back == self.measurements * self.writes,
                     f"floor: {self.measurements} x {self.writes} synchronous writes, every key read back")

    def _count(self, written: int) -> None:
        self.measurements += 1
        self.read_back += written


@dataclass
class Rounds:
    """Per-round rates of the floor and of the engine, measured back to back."""

    floor: list[float]
    engine: list[float]

    @property
    def floor_rate(self) -> float:
        return statistics.median(self.floor)

    @property
    def engine_rate(self) -> float:
        return statistics.median(self.engine)

    @property
    def ratio(self) -> float:
        return statistics.median(e / f for e, f in zip(self.engine, self.floor))


def interleaved(rounds: int, floor: Callable[[], float], engine: Callable[[], float]) -> Rounds:
    measured = Rounds([], [])
    for _ in range(rounds):
        measured.floor.append(floor())
        measured.engine.append(engine())
    return measured


class WriteProbe:
    """Records the byte size of every batch one store object writes, while in a ``with`` block."""

    def __init__(self, store: RocksStore) -> None:
        self.store = store
        self.batches: list[int] = []

    def __enter__(self) -> "WriteProbe":
        write = self.store.write

        def recording_write(ops: Iterable[WriteOp]) -> None:
            ops = list(ops)
            self.batches.append(batch_bytes(ops))
            write(ops)

        self.store.write = recording_write
        return self

    def __exit__(self, *exc: object) -> None:
        del self.store.write
