"""The serial executor: one thread at a time orders every mutation, with group commit.

Submissions join one queue. Whichever thread holds the leader lock drains it:
commands execute one at a time in queue order, each against the state the
earlier ones left, and up to ``max_group`` of them share one synchronous
WriteBatch; none is acknowledged before that write returns. A synchronous
caller with nobody ahead of it leads its own command, so a lone command pays
no thread hand-off; asynchronous submissions are led by a background thread.
This is the writer-queue shape of LevelDB's group commit.

A failed or uncertain write halts admission: the owner must reopen and
resolve in-flight commands by their IDs (docs/adr/0003). So does damaged
storage met on any read (docs/adr/0010): nothing more is admitted.

Admission time never runs backwards across the ledger: a new command whose
``admitted_at_ms`` is below the last journalled one is refused before
admission (docs/adr/0012), after the duplicate check, so a journalled command
is still answered by its ID. Nor may it run ahead of the owner's clock by
more than a small skew (``admission_clock.py``, docs/adr/0093).

Each group's commands, with their outcomes and latencies, are reported to
the registered ``listeners`` (``observers.py``) before their callers are
answered.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable, Generic, Sequence, TypeVar

from ledger_engine.application.admission import AdmittedCommand
from ledger_engine.application.admission_clock import AdmissionClock
from ledger_engine.storage.head import Head
from ledger_engine.application.journal_tree import BatchTree
from ledger_engine.application.observers import CommandReport, GroupReport, Listeners
from ledger_engine.application.pending import PendingBatch
from ledger_engine.application.transition import CommandOutcome, execute
from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.merkle.journal import JournalFrontier
from ledger_engine.projections.maintenance import Entries, IndexMaintainer
from ledger_engine.storage.rocks import RocksStore

log = logging.getLogger("porto.ledger")
T = TypeVar("T")
Queued = tuple[AdmittedCommand, "Future[CommandOutcome]", float]  # a command, its caller's answer, when it was queued


class _Task(Generic[T]):
    """Work that needs the executor alone, at a command boundary (exports, checkpoints)."""

    def __init__(self, function: Callable[[RocksStore], T]) -> None:
        self.function = function
        self.future: Future[T] = Future()


class SerialExecutor:
    def __init__(self, store: RocksStore, head: Head, frontier: JournalFrontier, *, admitted_floor_ms: int = 0,
                 max_group: int = 64, clock: AdmissionClock = AdmissionClock()) -> None:
        """``frontier``: the journal tree at ``head``, as the owner checked it on opening."""
        self.store = store
        self.head = head
        self.frontier = frontier
        self.admitted_floor_ms = admitted_floor_ms
        self.clock = clock
        self.max_group = max_group
        self.halted: LedgerError | None = None
        self.halt_cause: str | None = None  # the code of the fault that halted admission
        self.listeners = Listeners()
        self._indexes = IndexMaintainer()
        self._queue: deque[Queued | _Task[Any]] = deque()
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self._wakeup = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._lead_in_background, name="ledger-executor", daemon=True)
        self._thread.start()

    # Entry points.
    def submit(self, command: AdmittedCommand) -> Future[CommandOutcome]:
        """Queue ``command``; the background leader executes it."""
        return self.submit_all([command])[0]

    def execute_now(self, command: AdmittedCommand) -> CommandOutcome:
        """Queue ``command`` and lead the queue from this thread unless another thread already does."""
        future: Future[CommandOutcome] = Future()
        self._enqueue_all([(command, future, time.perf_counter())])
        self._lead()
        return future.result()

    def submit_all(self, commands: Sequence[AdmittedCommand]) -> list[Future[CommandOutcome]]:
        """Queue ``commands`` side by side, in this order, for the background leader: they share as few groups, and
        synchronous writes, as ``max_group`` allows."""
        items: list[Queued] = [(command, Future(), time.perf_counter()) for command in commands]
        self._enqueue_all(items)
        self._wakeup.set()
        return [future for _, future, _ in items]

    def call(self, function: Callable[[RocksStore], T]) -> Future[T]:
        """Run ``function(store)`` alone, between two groups."""
        task = _Task(function)
        self._enqueue_all([task])
        self._wakeup.set()
        return task.future

    def stop(self) -> None:
        self._stopping = True
        self._wakeup.set()
        self._thread.join()

    def halt(self, fault: LedgerError) -> None:
        """Stop admission for good; ``fault`` says why (a failed write, damaged storage)."""
        if self.halted is None:
            self.halted = LedgerError(ErrorCode.LEDGER_HALTED, f"{fault.code}: {fault.detail}")
            self.halt_cause = str(fault.code)
            log.critical("ledger halted: admission stopped until the owner is reopened: %s", self.halted.detail,
                         exc_info=True, extra={"halt_cause": self.halt_cause})

    # Leading.
    def _enqueue_all(self, items: Sequence[Queued | _Task[Any]]) -> None:
        if self.halted is not None:
            raise LedgerError(ErrorCode.LEDGER_HALTED, f"admission is stopped: {self.halted.detail}")
        with self._queue_lock:
            self._queue.extend(items)

    def _lead(self) -> None:
        """Drain the queue if no other thread leads. Re-checks after letting go, so no item strands."""
        while True:
            if not self._leader.acquire(blocking=False):
                return
            try:
                while self._run_next():
                    pass
            finally:
                self._leader.release()
            with self._queue_lock:
                if not self._queue:
                    return

    def _lead_in_background(self) -> None:
        while not self._stopping:
            self._wakeup.wait()
            self._wakeup.clear()
            self._lead()
        self._lead()

    def _run_next(self) -> bool:
        """Run the next task, or the next group of commands; False when the queue is empty."""
        with self._queue_lock:
            if not self._queue:
                return False
            first = self._queue[0]
            if isinstance(first, _Task):
                self._queue.popleft()
                work: _Task[Any] | list[Queued] = first
            else:
                work = self._take_group()
        if isinstance(work, _Task):
            self._run_task(work)
        else:
            self._commit(work)
        return True

    def _take_group(self) -> list[Queued]:
        """The commands at the head of the queue, up to ``max_group`` and before any task; under the queue lock."""
        group: list[Queued] = []
        while self._queue and len(group) < self.max_group:
            item = self._queue[0]
            if isinstance(item, _Task):
                break
            self._queue.popleft()
            group.append(item)
        return group

    def _run_task(self, task: _Task[Any]) -> None:
        try:
            task.future.set_result(task.function(self.store))
        except BaseException as error:  # handed to the caller, never swallowed
            task.future.set_exception(error)

    def _commit(self, group: list[Queued]) -> None:
        if self.halted is not None:
            self._answer(group, [self.halted] * len(group))
            return
        pending = PendingBatch(self.store)
        head, floor, tree = self.head, self.admitted_floor_ms, BatchTree(self.frontier)
        ceiling = self.clock.ceiling_ms()
        answers: list[tuple[Future[CommandOutcome], CommandOutcome | LedgerError]] = []
        # The group's index upkeep remembers the records it has seen written.
        index_entries: dict[tuple[str, str], Entries] = {}
        for command, future, _ in group:
            try:
                tree.check_claim(command.payload, pending.put, pending.get_raw)
                outcome, head = execute(command, pending, head, self._indexes, admitted_floor_ms=floor,
                                        admitted_ceiling_ms=ceiling, index_entries=index_entries)
                tree.add(head)
                floor = max(floor, command.envelope.admitted_at_ms) if not outcome.duplicate else floor
                answers.append((future, outcome))
            except StorageFault as fault:  # nothing of this group can be trusted: write none of it
                self._fail_group(group, fault)
                return
            except LedgerError as error:
                answers.append((future, error))
            except Exception as error:  # a rule bug; execute() stages nothing before it can fail
                answers.append((future, LedgerError(ErrorCode.RULE_FAILURE, f"{type(error).__name__}: {error}")))
        frontier = tree.grow(pending.put)
        assert frontier.size == head.sequence, (frontier.size, head.sequence)
        if len(pending):
            try:
                self.store.write(pending.ops())
            except Exception as error:  # uncertain: the batch may or may not be on disk
                self._fail_group(group, LedgerError(ErrorCode.LEDGER_HALTED, f"synchronous write failed: {error}"))
                return
        self.head, self.admitted_floor_ms, self.frontier = head, floor, frontier
        self._answer(group, [answer for _, answer in answers])

    def _fail_group(self, group: list[Queued], fault: LedgerError) -> None:
        self.halt(fault)
        assert self.halted is not None, "halt sets it, once"
        self._answer(group, [fault if isinstance(fault, StorageFault) else self.halted] * len(group), halted=True)

    def _answer(self, group: list[Queued],
                answers: list[CommandOutcome | LedgerError], *, halted: bool = False) -> None:
        """Report the group to the listeners, then answer each caller."""
        if self.listeners:  # a ledger nobody observes (the CLI, a benchmark) builds no report
            self._report(group, answers, halted)
        for (_, future, _), answer in zip(group, answers):
            if isinstance(answer, LedgerError):
                future.set_exception(answer)
            else:
                future.set_result(answer)

    def _report(self, group: list[Queued],
                answers: list[CommandOutcome | LedgerError], halted: bool) -> None:
        answered = time.perf_counter()
        self.listeners.notify(GroupReport(tuple(
            CommandReport(command.envelope.command_type, "halted" if halted else _outcome_name(answer),
                          answered - enqueued)
            for (command, _, enqueued), answer in zip(group, answers))))


def _outcome_name(answer: CommandOutcome | LedgerError) -> str:
    if isinstance(answer, LedgerError):
        return "halted" if answer.code == ErrorCode.LEDGER_HALTED else "refused"
    return "duplicate" if answer.duplicate else answer.outcome
