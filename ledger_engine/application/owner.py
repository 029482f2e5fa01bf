"""The ledger owner: the one process that opens the database read-write.

Callers hand it decoded envelopes and read back outcomes and records. There
is no generic write: the only mutation path is ``submit``, through admission,
the rules and the serial executor.
"""

from __future__ import annotations

import os
import time
import shutil
import tempfile
import uuid
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypeVar

import orjson

from ledger_engine.application.admission import AdmittedCommand, admit
from ledger_engine.application import admission_clock
from ledger_engine.application.admission_clock import AdmissionClock
from ledger_engine.application.envelopes import build_envelope
from ledger_engine.application.executor import SerialExecutor
from ledger_engine.application.journal import encoded_delta
from ledger_engine.application.journal_tree import build_from_journal, check_tree, is_kept, stored_root
from ledger_engine.application.observers import GroupListener
from ledger_engine.application.pending import PendingBatch
from ledger_engine.application.private_rows import require_private_key
from ledger_engine.open_json import Document, JsonObject, RecordData, Report, Unvalidated
from ledger_engine.storage.value_codec import decode_record, encode_record, encode_value
from ledger_engine.application.transition import CommandOutcome, stored_outcome
from ledger_engine.domain.actors import LEDGER_OWNER
from ledger_engine.domain.schema.dispatch_switch import (
    PENDING_RESUME_SENTINEL, SWITCH_KEY, DispatchSwitch, resume_key,
)
from ledger_engine.domain.view import Record
from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.genesis import genesis_hash, genesis_records
from ledger_engine.keys import seq20
from ledger_engine.layout import DELTAS, INDEXES, JOURNAL, META, PRIVATE_AUX, STATE, UNIQUE
from ledger_engine.merkle.journal import JournalFrontier
from ledger_engine.projections.maintenance import IndexMaintainer
from ledger_engine.selectors.view import LedgerView
from ledger_engine.security_log import SecurityLog, configured_path
from ledger_engine.storage.head import GENESIS_HEAD, HEAD_KEY, Head, read_head
from ledger_engine.storage.rocks import RocksStore
from ledger_engine.storage.rows import DeltaRow
from ledger_engine.storage.unsynced import refuse_unless_allowed

T = TypeVar("T")
GENESIS_KEY = b"genesis"
RECONCILE_KEY = b"reconciliation_owed"
LEGACY_DISPATCH_KEY = b"dispatch"  # the switch before it was ledger state (docs/adr/0091): read, never written
WRITER_KEY = b"writer"
# Commands that would let this copy dispatch: refused while it owes a reconciliation.
RESUME_COMMANDS = frozenset({"RequestDispatchResume", "DecideDispatchResume"})
OWN_READMISSIONS = 8  # another thread's commands may be journalled first, at a later time, this many times running


def read_genesis(store: RocksStore) -> Document:
    raw = store.get(META, GENESIS_KEY)
    if raw is None:
        raise LedgerError(ErrorCode.NOT_FOUND, f"no initialised ledger at {store.path}")
    genesis: Document = orjson.loads(raw)["document"]
    return genesis


def initialise(store: RocksStore, genesis: Document) -> Head:
    """Write genesis at sequence 0 into an empty database."""
    if store.get(META, HEAD_KEY) is not None:
        raise LedgerError(ErrorCode.ALREADY_EXISTS, f"the ledger at {store.path} is already initialised")
    pending = PendingBatch(store)
    rows: list[DeltaRow] = sorted((family, key, encode_record(1, data))
                                  for family, key, data in genesis_records(genesis))
    for index_key, value in IndexMaintainer().ops_for(rows, pending.get_raw):
        pending.put(INDEXES, index_key, value)
    for family, key, value in rows:
        pending.put(family, key.encode(), value)
    # Genesis as delta 0: an export folds deltas 0..head into its state rows and events.
    pending.put(DELTAS, seq20(0).encode(), encoded_delta(rows)[1])
    pending.put(META, GENESIS_KEY, encode_value({"document": genesis, "genesis_hash": genesis_hash(genesis)}))
    pending.put(META, HEAD_KEY, encode_value(GENESIS_HEAD.as_json()))
    store.write(pending.ops())
    return GENESIS_HEAD


def _identifier(document: Any, name: str) -> str | None:
    value = document.get(name) if isinstance(document, dict) else None
    return value[:128] if isinstance(value, str) else None


def read_writer_generation(store: RocksStore) -> int:
    raw = store.get(META, WRITER_KEY)
    if not raw:
        return 0
    try:
        generation = orjson.loads(raw)["generation"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        generation = None
    if type(generation) is not int:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{META}/{WRITER_KEY.decode()} is not a writer record")
    return generation


def writer_record(generation: int, why: str) -> bytes:
    """The operational writer generation of the recovery record (docs/spec/engine-and-journal.md §10): it rises on every
    read-write open, restore and promotion. It is not consensus and fences nothing by itself."""
    return encode_value({"generation": generation, "why": why, "at_ms": time.time_ns() // 1_000_000})


def advance_writer_generation(store: RocksStore, why: str) -> int:
    generation = read_writer_generation(store) + 1
    store.write([(META, WRITER_KEY, writer_record(generation, why))])
    return generation


def reconciliation_owed(reason: str) -> tuple[str, bytes, bytes]:
    """The write that marks a copy of the ledger as owing a reconciliation with the world (a restore, a replay, a
    loaded checkpoint): it may not dispatch until ``promote``. Not ledger state: the copy's history is the
    backup's, digest for digest, and owing a reconciliation is a fact about the copy (docs/adr/0091)."""
    return META, RECONCILE_KEY, encode_value({"reason": reason, "at_ms": time.time_ns() // 1_000_000})


def read_reconciliation_owed(store: RocksStore) -> RecordData | None:
    """``{"reason", "at_ms"}`` while this copy owes a reconciliation, else None."""
    raw = store.get(META, RECONCILE_KEY)
    if raw is not None:
        owed: RecordData = orjson.loads(raw)
        return owed
    legacy = store.get(META, LEGACY_DISPATCH_KEY)
    if legacy is not None and not orjson.loads(legacy)["enabled"]:
        return {"reason": orjson.loads(legacy)["reason"], "at_ms": None}
    return None


def promote(store: RocksStore, why: str) -> int:
    """The runbook's promotion, on a stopped ledger once reconcile has exited 0: this copy is the one that acts on
    the world. The writer generation rises and the reconciliation it owed is lifted; whether dispatch then runs
    is the journalled switch's, which only ``PauseDispatch`` and ``DecideDispatchResume`` change."""
    generation = read_writer_generation(store) + 1
    store.write([(META, WRITER_KEY, writer_record(generation, f"promoted: {why}")),
                 (META, RECONCILE_KEY, None), (META, LEGACY_DISPATCH_KEY, None)])
    return generation


def last_admitted_ms(store: RocksStore, head: Head) -> int:
    """Admission time of the last journalled command (0 at genesis): the floor for the next one."""
    if not head.sequence:
        return 0
    key = seq20(head.sequence)
    raw = store.get(JOURNAL, key.encode())
    if raw is None:
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{JOURNAL}/{key}, the head's entry, is missing")
    try:
        admitted_at_ms: int = orjson.loads(raw)["envelope"]["admitted_at_ms"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{JOURNAL}/{key} has no admission time") from None
    return admitted_at_ms


def check_for_owning(store: RocksStore) -> tuple[Head, int, JournalFrontier]:
    """Everything an owner checks on opening, reading only: the head, its entry's admission time, the writer
    record and the journal tree at the head. The owner runs it on the read-only open, before the read-write one,
    so a ledger it refuses is left exactly as it was (docs/adr/0081)."""
    head = read_head(store)
    floor = last_admitted_ms(store, head)
    read_writer_generation(store)
    return head, floor, check_tree(store, head)


def _check_unless_initialising(genesis: Document | None) -> Callable[[RocksStore], None]:
    def check(store: RocksStore) -> None:
        if genesis is None or store.get(META, HEAD_KEY) is not None:
            check_for_owning(store)
    return check


class LedgerOwner:
    def __init__(self, store: RocksStore, *, max_group: int = 64, clock: AdmissionClock | None = None) -> None:
        if store.staging:
            raise LedgerError(ErrorCode.STORE_NOT_DURABLE,
                              f"{store.path} is still being built; it is owned only once published")
        if not store.synced:
            refuse_unless_allowed(store.path)
        head, floor, frontier = check_for_owning(store)  # everything refused here is refused before any write
        clock = clock or AdmissionClock.configured()  # as is a malformed environment
        security_log_path = configured_path(store.path)
        self.store = store
        self.writer_generation = advance_writer_generation(store, "opened read-write")
        self.reconciliation_owed = read_reconciliation_owed(store)  # changes only on a stopped ledger (``promote``)
        if not is_kept(store):
            frontier = build_from_journal(store, head)
        self.security_log = SecurityLog(security_log_path)
        self.executor = SerialExecutor(store, head, frontier, admitted_floor_ms=floor, max_group=max_group,
                                       clock=clock)
        store.on_fault = self.executor.halt  # damaged storage met by any read stops admission

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str], *, genesis: Document | None = None,
             max_group: int = 64, clock: AdmissionClock | None = None) -> "LedgerOwner":
        """Open the ledger in ``data_dir``; with ``genesis``, a missing or empty directory is initialised.

        Without ``genesis`` nothing is ever created: a missing ledger is LEDGER_NOT_FOUND and a
        damaged one is refused with its storage code, untouched: the owner's checks run on the read-only
        open, before RocksDB opens the directory read-write.
        """
        # Reads the engine's whole environment: a malformed one is refused before anything in data_dir is touched.
        clock = clock or AdmissionClock.configured()
        store = RocksStore(data_dir, create=genesis is not None, check=_check_unless_initialising(genesis))
        try:
            if genesis is not None and store.get(META, HEAD_KEY) is None:
                initialise(store, genesis)
            return cls(store, max_group=max_group, clock=clock)
        except BaseException:
            store.close()
            raise

    # Mutation: the only path.
    def _admit_or_log(self, document: Any) -> AdmittedCommand:
        """Refusals before admission go to the security log, never to the ledger (docs/spec/engine-and-journal.md §11)."""
        try:
            command = admit(document)
        except LedgerError as error:
            self.security_log.record("refused_before_admission", str(error.code), error.detail,
                                     command_id=_identifier(document, "command_id"),
                                     actor_id=_identifier(document, "actor_id"))
            raise
        self._require_no_reconciliation_owed(command)
        return command

    def journal_tree(self) -> Report:
        """``{"size", "root"}`` of the journal tree at the last durable group."""
        frontier = self.executor.frontier
        return {"size": frontier.size, "root": frontier.root().hex()}

    def journal_root_at(self, size: int) -> str | None:
        """The journal tree's root over entries 1..size, or None beyond the head; read from nodes that never change."""
        if not 0 <= size <= self.executor.frontier.size:
            return None
        return stored_root(self.store, size)

    def submit_async(self, document: Any) -> Future[CommandOutcome]:
        return self.executor.submit(self._admit_or_log(document))

    def submit(self, document: Any) -> CommandOutcome:
        """Submit and wait until durable; led from the calling thread when nobody is ahead."""
        return self.executor.execute_now(self._admit_or_log(document))

    def submit_admitted(self, command: AdmittedCommand) -> CommandOutcome:
        """``submit`` for a command its caller has just admitted (the gateway), so it is not admitted twice."""
        self._require_no_reconciliation_owed(command)
        return self.executor.execute_now(command)

    def submit_all_admitted(self, commands: Sequence[AdmittedCommand]) -> list[Future[CommandOutcome]]:
        """``submit_admitted`` for several commands at once, queued side by side in this order so they share group
        commits; each future holds its command's outcome or refusal. Refuses them all, queuing none, if one may
        not be submitted at all."""
        for command in commands:
            self._require_no_reconciliation_owed(command)
        return self.executor.submit_all(commands)

    def submit_own(self, command_type: str, payload: Unvalidated, *,
                   evidence_hashes: Iterable[str] = ()) -> CommandOutcome:
        """Submit as the ledger's own actor (``actors.LEDGER_OWNER``), in this process: what only the owner builds
        (a frozen chunk of a day and its request's progress, docs/adr/0073). Dated by the owner's clock, never before
        the last journalled admission; dated again if another thread's later-dated command was journalled first."""
        hashes = tuple(evidence_hashes)
        for _ in range(OWN_READMISSIONS):
            try:
                return self.submit(self._own_envelope(command_type, payload, hashes))
            except LedgerError as error:
                if error.code != ErrorCode.ADMISSION_TIME_REGRESSED:
                    raise
        return self.submit(self._own_envelope(command_type, payload, hashes))

    def _own_envelope(self, command_type: str, payload: Unvalidated, hashes: tuple[str, ...]) -> Unvalidated:
        now_ms = (self.executor.clock.now_ms or admission_clock.wall_clock_ms)()
        return build_envelope(command_type, payload, command_id=str(uuid.uuid4()), actor_id=LEDGER_OWNER,
                              admitted_at_ms=max(now_ms, self.admission_floor_ms()), evidence_hashes=hashes)

    def _require_no_reconciliation_owed(self, command: AdmittedCommand) -> None:
        """A copy that owes a reconciliation takes no step towards resuming dispatch (a decline is no such step)."""
        if not self.reconciliation_owed or command.envelope.command_type not in RESUME_COMMANDS:
            return
        if getattr(command.payload, "decision", None) == "decline":
            return
        error = LedgerError(ErrorCode.RECONCILIATION_REQUIRED,
                            f"this ledger owes a reconciliation ({self.reconciliation_owed['reason']}): reconcile, "
                            "then promote it (porto-ledger promote) before dispatch may resume")
        self.security_log.record("refused_before_admission", str(error.code), error.detail,
                                 command_id=command.command_id, actor_id=command.envelope.actor_id)
        raise error

    def add_command_listener(self, listener: GroupListener) -> None:
        """``listener`` hears of every group of commands the executor answers (``observers.py``)."""
        self.executor.listeners.add(listener)

    def halt_cause(self) -> str | None:
        """The code of the fault that halted admission, or None while the ledger admits commands."""
        return self.executor.halt_cause

    def admission_floor_ms(self) -> int:
        """No new command may be admitted before this time: the last journalled admission time."""
        return self.executor.admitted_floor_ms

    # Reads. Point reads are consistent; scans read the live database (docs/adr/0002).
    @property
    def path(self) -> Path:
        """The ledger's data directory."""
        return self.store.path

    def head(self) -> Head:
        return self.executor.head

    def resolve(self, command_id: str) -> CommandOutcome | None:
        found = stored_outcome(PendingBatch(self.store), command_id, duplicate=True)
        return found[1] if found else None

    def get(self, family: str, key: str) -> Record | None:
        raw = self.store.get(family, key.encode())
        return decode_record(raw) if raw is not None else None

    def scan(self, family: str, prefix: str = "", *, start: str | None = None,
             limit: int = 100) -> list[tuple[str, JsonObject]]:
        rows: list[tuple[str, JsonObject]] = []
        for key, raw in self.store.scan(family, prefix.encode(), start.encode() if start else None):
            if len(rows) >= limit:
                break
            rows.append((key.decode(), orjson.loads(raw)))
        return rows

    def journal_entry(self, sequence: int) -> Document | None:
        raw = self.store.get(JOURNAL, seq20(sequence).encode())
        return orjson.loads(raw) if raw is not None else None

    def dispatch_state(self) -> Report:
        """Whether workers may carry out effects, and why: the journalled switch, unless this copy owes a
        reconciliation. ``{"enabled", "reason", "paused_by", "since_ms", "switch", "reconciliation_owed",
        "resume_request"}``; ``paused_by`` names the actor whose pause holds (None otherwise)."""
        record = self.get(STATE, SWITCH_KEY)
        switch = record.data_as(DispatchSwitch) if record is not None else None
        paused = switch is not None and switch["status"] == "paused"
        owed = self.reconciliation_owed
        sentinel = self.get(UNIQUE, PENDING_RESUME_SENTINEL)
        request = self.get(STATE, resume_key(sentinel.data["resume_id"])) if sentinel is not None else None
        return {"enabled": owed is None and not paused,
                "reason": owed["reason"] if owed else switch["reason"] if switch else "never paused",
                "paused_by": switch["changed_by"] if switch and paused else None,
                "since_ms": switch["changed_at_ms"] if switch else None,
                "switch": switch, "reconciliation_owed": owed,
                "resume_request": request.data if request is not None else None}

    def genesis(self) -> Document:
        return read_genesis(self.store)

    # Work at a command boundary.
    def at_boundary(self, function: Callable[[RocksStore], T]) -> T:
        return self.executor.call(function).result()

    def view(self) -> LedgerView:
        """A read-only view for selectors; call it inside ``at_boundary`` for reads that belong together."""
        return LedgerView(self.store)

    def read(self, selector: Callable[[LedgerView], T]) -> T:
        """``selector`` on a view between two commands (never call it from inside ``at_boundary``)."""
        return self.at_boundary(lambda store: selector(LedgerView(store)))

    def put_private(self, key: str, value: RecordData) -> None:
        """Private auxiliary data (identity mappings): outside the logical state and its digest."""
        row = (PRIVATE_AUX, require_private_key(key).encode(), encode_value(value))
        self.at_boundary(lambda store: store.write([row]))

    def checkpoint(self, destination: str | os.PathLike[str]) -> None:
        self.at_boundary(lambda store: store.checkpoint(destination))

    def with_checkpoint(self, function: Callable[[RocksStore], T]) -> T:
        """Run ``function`` on a read-only copy taken at a command boundary; writes go on meanwhile."""
        scratch = Path(tempfile.mkdtemp(prefix="porto-checkpoint-"))
        try:
            self.checkpoint(scratch / "db")
            with RocksStore(scratch / "db", read_only=True) as copy:
                return function(copy)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def close(self) -> None:
        self.executor.stop()
        self.store.close()
        self.security_log.close()

    def __enter__(self) -> "LedgerOwner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
