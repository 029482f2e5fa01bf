"""The seeded fault campaign: every process of the effects stack, a supervisor that restarts what dies, and faults.

Processes: a ``redis-server`` (the broker, no persistence), the durable
SIMULATED chain, the console (ledger owner), two payment workers (each its
own ledger actor, sharing one signed-payment journal) and ``celery beat``.
``Supervisor`` plays systemd's ``Restart=always``: every few hundred
milliseconds it starts again whatever has exited. ``FaultInjector`` draws
the faults' order, pauses and targets from one seed, and spreads them over
the campaign's progress (fault ``k`` waits for ``k / 2F`` of the
payments to be signed):

- ``worker_after_journal``: SIGKILL a payment worker right after it
  journalled the payer's lowest unsettled sequence and before the ledger
  recorded it: the worker is stopped (SIGSTOP) as its journal grows, and
  killed only in that state (its lowest new sequence is the chain's next one
  and the ledger holds no attempt for it); otherwise it goes on and the
  fault waits for the next signature;
- ``worker_answer_held``: the chain accepts the next transfer and holds its
  answer; SIGKILL the worker waiting for it once the chain knows the transaction;
- ``console``, ``redis``, ``chain``: SIGKILL that process (the supervisor
  restarts it; the broker comes back empty, the chain with what it
  committed and without its mempool, as a node does);
- ``chain_mempool_lost``: the chain holds every new transfer in its
  mempool; once some are waiting there, SIGKILL it (the supervisor restarts
  it without them) and end the hold;
- ``answers_dropped``: the chain accepts the next few submissions and drops
  their answers.

Nobody releases a quarantined effect, resumes dispatch or reconciles by hand.
The same seed gives the same schedule; the processes' own timing still
varies from run to run.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import httpx

from tests.effects.chain_process import ChainProcess
from tests.effects.redis_server import RedisServer
from tests.effects.stack import Stack

FAULT_MIX = {"worker_after_journal": 4, "worker_answer_held": 3, "console": 3, "redis": 3, "chain": 3,
             "answers_dropped": 3, "chain_mempool_lost": 2}
RESTART_DELAY_SECS = 0.5
EVENT_WAIT_SECS = 20.0
WAITING_BEFORE_THE_NODE_DIES = 3  # transfers the chain holds in its mempool when it is killed
LATEST_SIGNATURES = 30  # the journal's newest transfers, where the ones waiting on chain are
STRANDING_TRIES = 20  # signatures a worker may journal before one is its payer's lowest and still unrecorded


@dataclass
class ProcessLog:
    """What happened to the processes: kills the faults made, and every exit the supervisor saw."""

    kills: dict[str, int] = field(default_factory=dict)
    exits: dict[str, int] = field(default_factory=dict)
    restarts: int = 0
    faults: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stranded: int = 0  # workers killed holding a journalled, unrecorded signature at the payer's next sequence
    mempools_lost: list[int] = field(default_factory=list)  # transfers waiting in the mempool each time it was lost

    def unexpected_exits(self) -> dict[str, int]:
        return {name: count - self.kills.get(name, 0) for name, count in self.exits.items()
                if count > self.kills.get(name, 0)}


class Processes:
    """The campaign's processes by name, with a lock so a kill and a restart never interleave."""

    def __init__(self, stack: Stack, broker: RedisServer, chain: ChainProcess, workers: dict[str, str]) -> None:
        self.stack, self.broker, self.chain = stack, broker, chain
        self.workers = workers  # process name -> credential
        self.lock = threading.RLock()
        self.book = ProcessLog()

    def names(self) -> list[str]:
        return ["redis", "chain", "console", *self.workers, "beat"]

    def alive(self, name: str) -> bool:
        if name == "redis":
            return self.broker.alive()
        if name == "chain":
            return self.chain.alive()
        process = {"console": self.stack.console, "beat": self.stack.beat}.get(name, self.stack.workers.get(name))
        return process is not None and process.poll() is None

    def start(self, name: str) -> None:
        if name == "redis":
            self.broker.start()
        elif name == "chain":
            self.chain.start()
        elif name == "console":
            self.stack.start_console()
        elif name == "beat":
            self.stack.start_beat(next(iter(self.workers.values())))
        else:
            self.stack.start_worker(self.workers[name], process=name)

    def kill(self, name: str) -> None:
        with self.lock:
            if not self.alive(name):
                return
            self.book.kills[name] = self.book.kills.get(name, 0) + 1
            if name == "redis":
                self.broker.kill()
            elif name == "chain":
                self.chain.kill()
            elif name == "console":
                self.stack.stop_console(kill=True)
            else:
                self.stack.kill_worker(name)

    def stop_all(self) -> None:
        with self.lock:
            self.stack.stop_all()
            self.chain.stop()
            self.broker.stop()


class Supervisor(threading.Thread):
    """Restarts every process that has exited, like a process manager would; counts the exits it saw."""

    def __init__(self, processes: Processes) -> None:
        super().__init__(name="campaign-supervisor", daemon=True)
        self.processes = processes
        self.running = threading.Event()
        self.running.set()

    def run(self) -> None:
        book = self.processes.book
        while self.running.is_set():
            for name in self.processes.names():
                with self.processes.lock:
                    if not self.running.is_set() or self.processes.alive(name):
                        continue
                    book.exits[name] = book.exits.get(name, 0) + 1
                    time.sleep(RESTART_DELAY_SECS)
                    self._restart(name)
            time.sleep(0.1)

    def _restart(self, name: str) -> None:
        try:
            self.processes.start(name)
            self.processes.book.restarts += 1
        except AssertionError as error:  # it died again while starting: the next round tries again
            self.processes.book.errors.append(f"restart of {name}: {error}"[:300])

    def stop(self) -> None:
        self.running.clear()
        self.join(timeout=30)


class FaultInjector(threading.Thread):
    """Injects the seed's faults one after another, spread over the campaign's signing.

    Fault ``k`` of ``F`` waits until ``k / 4F`` of the payments have a
    journalled signature, then a seeded pause: the faults land over the first
    quarter of the signing. The faults take time of their own (a held answer,
    a restart), so on a fast machine the payments can all settle first: the
    faults still to come are then left out, since they would meet nothing.
    The test requires most of them, of every kind, while payments were
    outstanding.
    """

    def __init__(self, processes: Processes, seed: int, journal_path: Path, outstanding: Callable[[], bool],
                 actors: dict[str, str], payments: int) -> None:
        super().__init__(name="campaign-faults", daemon=True)
        self.processes = processes
        self.random = random.Random(seed)
        self.schedule = [kind for kind, count in sorted(FAULT_MIX.items()) for _ in range(count)]
        self.random.shuffle(self.schedule)
        self.journal_path = journal_path
        self.outstanding = outstanding
        self.payments = payments
        self.process_of_actor = {actor: name for name, actor in actors.items()}
        self.injected_while_outstanding = 0
        self.done = threading.Event()
        self.stopping = threading.Event()

    def run(self) -> None:
        try:
            for number, kind in enumerate(self.schedule):
                self._wait_for_signed(number * self.payments // (4 * len(self.schedule)))
                time.sleep(self.random.uniform(0.0, 1.0))
                was_outstanding = self.outstanding()
                if self.stopping.is_set() or not was_outstanding:
                    return
                getattr(self, kind)()
                self.processes.book.faults.append(kind)
                self.injected_while_outstanding += was_outstanding
        except Exception as error:  # reported by the test, which then fails
            self.processes.book.errors.append(f"fault injector: {type(error).__name__}: {error}")
        finally:
            self.done.set()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=30)

    def _wait_for_signed(self, payments: int) -> None:
        while not self.stopping.is_set() and self._signed_payments() < payments:
            time.sleep(0.1)

    def _signed_payments(self) -> int:
        if not self.journal_path.exists():
            return 0
        lines = self.journal_path.read_bytes().split(b"\n")[:-1]
        return len({json.loads(line)["payment_id"] for line in lines})

    # The faults.
    def worker_after_journal(self) -> None:
        """Kill a worker holding a journalled, unrecorded signature at the payer's next sequence (see the module)."""
        for _ in range(STRANDING_TRIES):
            lines = self._journal_lines()
            record = self._wait_for(lambda: self._journal_record_after(lines), "a new journalled signature",
                                    step=0.001)
            if record is None:
                break  # nothing is being signed any more
            name = self._worker_of(record)
            with self.processes.lock:
                if not self.processes.alive(name):
                    continue
                self.processes.stack.pause_worker(name, True)
                if self._strands(self._journal_records_after(lines)):
                    self.processes.kill(name)
                    self.processes.book.stranded += 1
                    return
                self.processes.stack.pause_worker(name, False)
        self.processes.kill(self._worker_of(None))  # the state never came: kill one anyway

    def _strands(self, records: list[dict[str, Any]]) -> bool:
        """The lowest of ``records`` is the payer's next sequence on chain and the ledger has no attempt for it."""
        lowest = min(records, key=lambda record: record["sequence_number"])
        try:
            next_sequence = httpx.get(f"{self.processes.chain.url}/v1/accounts/{lowest['sender']}", timeout=2)
            payment = self.processes.stack.payment(lowest["payment_id"])
        except Exception:  # the chain or the ledger's view is restarting: not this time
            return False
        return (next_sequence.status_code == 200 and int(next_sequence.json()["sequence_number"])
                == lowest["sequence_number"] and f"tx-{lowest['transaction_hash'][2:]}" not in payment["attempt_ids"])

    def chain_mempool_lost(self) -> None:
        """The node dies while transfers wait in its mempool; it comes back with what it committed only."""
        self._control("hold", after=0)
        waiting = self._wait_for(self._waiting_in_mempool, "transfers waiting in the mempool")
        self.processes.kill("chain")
        self.processes.book.mempools_lost.append(waiting or 0)
        self._control("release")  # once the supervisor has it running again

    def worker_answer_held(self) -> None:
        lines = self._journal_lines()
        self._control("faults", kind="drop_response", hold_seconds=6)
        record = self._wait_for(lambda: self._journal_record_after(lines), "a transfer signed after the hold")
        if record is not None:
            self._wait_for(lambda: self._chain_knows(record["transaction_hash"]), "the chain to hold the transfer")
        self.processes.kill(self._worker_of(record))

    def console(self) -> None:
        self.processes.kill("console")

    def redis(self) -> None:
        self.processes.kill("redis")

    def chain(self) -> None:
        self.processes.kill("chain")

    def answers_dropped(self) -> None:
        self._control("faults", kind="drop_response", times=self.random.randint(2, 4))

    def _waiting_in_mempool(self) -> int:
        """How many of the latest journalled transfers the held chain has waiting, once there are enough; else 0.

        New signatures or the same bytes broadcast again (after the node last lost its mempool) alike."""
        latest = self._journal_records_after(0)[-LATEST_SIGNATURES:]
        waiting = sum(self._chain_answer(record["transaction_hash"]).get("type") == "pending_transaction"
                      for record in latest)
        return waiting if waiting >= WAITING_BEFORE_THE_NODE_DIES else 0

    # Helpers.
    def _control(self, path: str, **request: Any) -> None:
        """A chain control call, waiting out a chain the supervisor is still restarting."""
        deadline = time.monotonic() + EVENT_WAIT_SECS
        while True:
            try:
                self.processes.chain.control(path, **request)
                return
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _journal_lines(self) -> int:
        if not self.journal_path.exists():
            return 0
        return self.journal_path.read_bytes().count(b"\n")

    def _journal_record_after(self, lines: int) -> dict[str, Any] | None:
        records = self._journal_records_after(lines)
        return records[-1] if records else None

    def _journal_records_after(self, lines: int) -> list[dict[str, Any]]:
        if not self.journal_path.exists():
            return []
        complete = self.journal_path.read_bytes().split(b"\n")[:-1]
        return [json.loads(line) for line in complete[lines:]]

    def _chain_knows(self, transaction_hash: str) -> bool:
        return bool(self._chain_answer(transaction_hash))

    def _chain_answer(self, transaction_hash: str) -> dict[str, Any]:
        """The chain's answer for one transaction, pending or committed; empty when it does not know it."""
        try:
            answer = httpx.get(f"{self.processes.chain.url}/v1/transactions/by_hash/{transaction_hash}", timeout=2)
        except httpx.HTTPError:
            return {}
        return answer.json() if answer.status_code == 200 else {}

    def _worker_of(self, record: dict[str, Any] | None) -> str:
        if record is None or record["worker_id"] not in self.process_of_actor:
            return self.random.choice(sorted(self.processes.workers))
        return self.process_of_actor[record["worker_id"]]

    @staticmethod
    def _wait_for(condition: Callable[[], Any], what: str, step: float = 0.05) -> Any:
        """The condition's value once true, or None after ``EVENT_WAIT_SECS`` (the fault then hits at random)."""
        deadline = time.monotonic() + EVENT_WAIT_SECS
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            time.sleep(step)
        return None
