"""The serial executor: one thread orders every mutation, with group commit.

Commands execute one at a time in sequence order, each against the state the
earlier ones left. Up to ``max_group`` consecutive commands share one
synchronous WriteBatch; none is acknowledged before that write returns. A
failed or uncertain write halts admission: the owner must reopen and resolve
in-flight commands by their IDs (docs/adr/0003).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Callable

from ledger_engine.application.admission import AdmittedCommand
from ledger_engine.application.journal import Head
from ledger_engine.application.pending import PendingBatch
from ledger_engine.application.transition import CommandOutcome, execute
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.projections.maintenance import IndexMaintainer
from ledger_engine.storage.rocks import RocksStore

_STOP = object()


class _Task:
    """Work that needs the executor alone, at a command boundary (exports, consistent reads)."""

    def __init__(self, function: Callable[[RocksStore], Any]) -> None:
        self.function = function
        self.future: Future = Future()


class SerialExecutor:
    def __init__(self, store: RocksStore, head: Head, *, max_group: int = 64) -> None:
        self.store = store
        self.head = head
        self.max_group = max_group
        self.halted: LedgerError | None = None
        self._indexes = IndexMaintainer()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="ledger-executor", daemon=True)
        self._thread.start()

    def submit(self, command: AdmittedCommand) -> Future:
        future: Future = Future()
        self._check_running()
        self._queue.put((command, future))
        return future

    def call(self, function: Callable[[RocksStore], Any]) -> Future:
        """Run ``function(store)`` on the executor thread between two groups."""
        self._check_running()
        task = _Task(function)
        self._queue.put(task)
        return task.future

    def stop(self) -> None:
        self._queue.put(_STOP)
        self._thread.join()

    def _check_running(self) -> None:
        if self.halted is not None:
            raise LedgerError(ErrorCode.LEDGER_HALTED, f"admission is stopped: {self.halted.detail}")

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, _Task):
                self._run_task(item)
                continue
            group = [item]
            while len(group) < self.max_group:
                try:
                    following = self._queue.get_nowait()
                except queue.Empty:
                    break
                if following is _STOP or isinstance(following, _Task):
                    self._commit(group)
                    group = []
                    if following is _STOP:
                        return
                    self._run_task(following)
                    break
                group.append(following)
            if group:
                self._commit(group)

    def _run_task(self, task: _Task) -> None:
        try:
            task.future.set_result(task.function(self.store))
        except BaseException as error:  # handed to the caller, never swallowed
            task.future.set_exception(error)

    def _commit(self, group: list[tuple[AdmittedCommand, Future]]) -> None:
        if self.halted is not None:
            for _, future in group:
                future.set_exception(LedgerError(ErrorCode.LEDGER_HALTED, self.halted.detail))
            return
        pending = PendingBatch(self.store)
        head = self.head
        answers: list[tuple[Future, CommandOutcome | LedgerError]] = []
        for command, future in group:
            try:
                outcome, head = execute(command, pending, head, self._indexes)
                answers.append((future, outcome))
            except LedgerError as error:
                answers.append((future, error))
            except Exception as error:  # a rule bug; execute() stages nothing before it can fail
                answers.append((future, LedgerError(ErrorCode.RULE_FAILURE, f"{type(error).__name__}: {error}")))
        if len(pending):
            try:
                self.store.write(pending.ops())
            except Exception as error:  # uncertain: the batch may or may not be on disk
                self.halted = LedgerError(ErrorCode.LEDGER_HALTED, f"synchronous write failed: {error}")
                for future, _ in answers:
                    future.set_exception(self.halted)
                return
        self.head = head
        for future, answer in answers:
            if isinstance(answer, LedgerError):
                future.set_exception(answer)
            else:
                future.set_result(answer)
