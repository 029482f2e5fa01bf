"""The one path from a caller to the ledger: build once, store, submit or resolve by command ID.

The console, the internal API and the streaming adapters all go through
``CommandGateway``. The first request for a command ID builds its envelope
with this process's admission time, checks that it would be admitted, and
stores it durably; every later request with that ID (a retried form, a
redelivered webhook, a caller that lost the response) gets the stored envelope
back, and the ledger answers with the original outcome. The same ID with
another request is ``COMMAND_ID_CONFLICT``. A person's form and a worker's
request come in through one answer path on top of this one
(``command_answers``): a retry the ledger has journalled is answered from the
journal there, without the owner admitting it again.

Admission time is taken before the envelope is stored and submitted, so two
threads can reach the ledger out of time order, and the later-timed one may
be journalled first. The ledger then refuses the other with
``ADMISSION_TIME_REGRESSED`` and journals nothing, so the gateway re-admits
it: the same command ID and request with a fresh admission time, stored in
place of the old envelope, then submitted (docs/adr/0012).

No envelope of the ledger's own actor, nor of a command only the owner
submits (``CommandSpec.owner_only``: a frozen chunk of a day), is built,
stored or submitted here: ``OWNER_ONLY``, and nothing is journalled. The owner
submits those in its own process (docs/adr/0073).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from ledger_engine.adapters.envelope_store import EnvelopeStore
from ledger_engine.adapters.evidence import EvidenceStore
from ledger_engine.application.admission import AdmittedCommand, admit
from ledger_engine.application.envelopes import build_envelope
from ledger_engine.open_json import Document, Unvalidated
from ledger_engine.storage.head import Head
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.canonical import canonical_bytes
from ledger_engine.domain.actors import LEDGER_OWNER
from ledger_engine.domain.registry import spec_for
from ledger_engine.domain.view import Record
from ledger_engine.errors import ErrorCode, LedgerError

COMMAND_ID_DOMAIN = "porto:london:command-id:v1\n"
# Each re-admission takes a time at or above the ledger's floor, so only commands journalled in
# between can overtake it again; a few rounds settle any realistic burst.
MAX_READMISSIONS = 8
# Envelopes built here and not yet submitted, with the command admitted from them. An envelope that
# leaves this memory (a burst of builds never submitted) is simply admitted again by the ledger.
MAX_REMEMBERED_ADMISSIONS = 1024
# How far ahead of this process's clock a stored envelope's admission time may lie: clocks of a
# recovered host's processes differ by less. Further ahead, it would move the ledger's clock with it.
MAX_STORED_AHEAD_MS = 60_000


class Ledger(Protocol):
    """What the gateway needs of a ``LedgerOwner``."""

    def submit(self, document: Any) -> CommandOutcome: ...

    def resolve(self, command_id: str) -> CommandOutcome | None: ...

    def admission_floor_ms(self) -> int: ...

    def get(self, family: str, key: str) -> Record | None: ...

    def journal_entry(self, sequence: int) -> Document | None: ...

    def head(self) -> Head: ...


@dataclass(frozen=True, slots=True)
class Queued:
    """Envelopes handed to the owner together (``CommandGateway.queue_all``): each one's future, or None where it
    is left to be submitted on its own."""

    envelopes: Sequence[Unvalidated]
    futures: list[Future[CommandOutcome] | None]


class Turns:
    """Numbered turns, taken in order, each let through only once every earlier one has passed."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._taken = 0
        self._passed = 0

    def take(self) -> int:
        with self._changed:
            self._taken += 1
            return self._taken

    @contextmanager
    def through(self, turn: int) -> Iterator[None]:
        """Wait until every turn before ``turn`` has passed, then pass it when the block ends."""
        with self._changed:
            self._changed.wait_for(lambda: self._passed == turn - 1)
        try:
            yield
        finally:
            with self._changed:
                self._passed = turn
                self._changed.notify_all()


class Together:
    """A turn of ``CommandGateway.admitting_together``: its admission time, and its queueing in turn."""

    def __init__(self, turns: Turns, turn: int, admitted_at_ms: int,
                 queue_all: Callable[[Sequence[Unvalidated]], Queued]) -> None:
        self.admitted_at_ms = admitted_at_ms
        self._turns, self._turn, self._queue_all = turns, turn, queue_all
        self._passed = False

    def queue(self, envelopes: Sequence[Unvalidated]) -> Queued:
        """``CommandGateway.queue_all`` once every earlier turn has queued; this turn has then passed."""
        assert not self._passed, "a turn queues once"
        self._passed = True
        with self._turns.through(self._turn):
            return self._queue_all(envelopes)

    def pass_turn(self) -> None:
        """A turn that queued nothing still lets the later ones through."""
        if not self._passed:
            self._passed = True
            with self._turns.through(self._turn):
                pass


@dataclass(frozen=True, slots=True)
class Unstored:
    """An envelope built, admitted and checked for a request, not stored yet (``CommandGateway.keep`` stores it)."""

    envelope: Unvalidated
    command: AdmittedCommand
    request: Unvalidated
    check: Callable[[Unvalidated], None] | None


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def new_id() -> str:
    return str(uuid.uuid4())


def derived_command_id(*parts: str) -> str:
    """A command ID fixed by the input it admits, so a redelivered input maps to the same command."""
    digest = hashlib.sha256((COMMAND_ID_DOMAIN + "\n".join(parts)).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


class CommandGateway:
    def __init__(self, ledger: Ledger, root: str | os.PathLike[str], *,
                 clock: Callable[[], int] = wall_clock_ms) -> None:
        self.ledger = ledger
        self.evidence = EvidenceStore(Path(root) / "evidence")
        self.envelopes = EnvelopeStore(Path(root) / "envelopes")
        self._clock = clock
        self._last_ms = 0
        self._lock = threading.Lock()
        self._readmitting = threading.Lock()
        self._ordering = threading.Lock()
        self._turns = Turns()
        self._admitted: dict[str, tuple[Unvalidated, AdmittedCommand]] = {}

    def envelope(self, command_type: str, payload: Unvalidated, *, actor_id: str, command_id: str,
                 expected: Iterable[Unvalidated] = (), evidence: Iterable[str] = (),
                 check: Callable[[Unvalidated], None] | None = None,
                 admitted_at_ms: int | None = None) -> Unvalidated:
        """The stored envelope for this request, building and storing it the first time.

        ``check`` is the caller's own refusal of an admitted envelope (it raises): it runs before the envelope is
        stored, so a request refused at the edge leaves nothing behind, and again on a stored one. A new envelope
        is admitted now, or at ``admitted_at_ms``, a time this gateway gave (``admitting_together``).
        """
        return self.keep(self.admitted(command_type, payload, actor_id=actor_id, command_id=command_id,
                                       expected=expected, evidence=evidence, check=check,
                                       admitted_at_ms=admitted_at_ms))

    def admitted(self, command_type: str, payload: Unvalidated, *, actor_id: str, command_id: str,
                 expected: Iterable[Unvalidated] = (), evidence: Iterable[str] = (),
                 check: Callable[[Unvalidated], None] | None = None,
                 admitted_at_ms: int | None = None) -> Unvalidated | Unstored:
        """``envelope`` up to its storing: the stored envelope for this request, or a new one admitted and checked
        but not stored yet (``keep`` stores it), so a caller with many stores them side by side."""
        stored = self.envelopes.load(command_id)
        if stored is not None:
            require_not_owners(command_type, actor_id)
            request = _request(command_type=command_type, payload=payload, actor_id=actor_id, expected=expected,
                               evidence=evidence)
            return self._stored_for(stored, request, check)
        return self.built(command_type, payload, actor_id=actor_id, command_id=command_id, expected=expected,
                          evidence=evidence, check=check, admitted_at_ms=admitted_at_ms)

    def built(self, command_type: str, payload: Unvalidated, *, actor_id: str, command_id: str,
              expected: Iterable[Unvalidated] = (), evidence: Iterable[str] = (),
              check: Callable[[Unvalidated], None] | None = None, admitted_at_ms: int | None = None) -> Unstored:
        """A new envelope for ``command_id``, admitted and checked but not stored (``keep`` stores it), for a caller
        that has looked for one stored under that ID already (``command_answers``)."""
        require_not_owners(command_type, actor_id)
        request = _request(command_type=command_type, payload=payload, actor_id=actor_id, expected=expected,
                           evidence=evidence)
        built = _build(command_id, request, admitted_at_ms=admitted_at_ms or self.now_ms())
        command = admit(built)  # bad input is refused before anything is stored
        missing = next((digest for digest in built["evidence_hashes"] if digest not in self.evidence), None)
        if missing is not None:  # absent, or a file under its name that is not its bytes
            raise LedgerError(ErrorCode.INVALID_REFERENCE,
                              f"evidence {missing} is not stored intact; store its bytes again")
        if check is not None:
            check(built)
        return Unstored(built, command, request, check)

    def keep(self, admitted: Unvalidated | Unstored) -> Unvalidated:
        """The stored envelope: ``admitted`` stored unless another request stored one for its ID first."""
        if not isinstance(admitted, Unstored):
            return admitted
        stored = self.envelopes.store(admitted.envelope, canonical=admitted.command.canonical)
        if stored is not admitted.envelope:
            return self._stored_for(stored, admitted.request, admitted.check)
        self._remember(stored, admitted.command)
        return stored

    def _stored_for(self, stored: Unvalidated, request: Unvalidated,
                    check: Callable[[Unvalidated], None] | None) -> Unvalidated:
        """The envelope stored under a command ID, if it was stored for this very request."""
        again = _build(stored["command_id"], request, admitted_at_ms=stored["admitted_at_ms"],
                       ruleset_version=stored["ruleset_version"])
        if canonical_bytes(again) != canonical_bytes(stored):
            raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT,
                              f"command {stored['command_id']} was stored for another request")
        self.require_not_ahead(stored)
        if check is not None:
            check(stored)
        return stored

    def require_not_ahead(self, stored: Unvalidated) -> None:
        """A stored envelope admitted later than this clock allows was not admitted here (docs/adr/0078)."""
        latest = self.now_ms() + MAX_STORED_AHEAD_MS
        if stored["admitted_at_ms"] > latest:
            raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT,
                              f"command {stored['command_id']} was stored with an admission time after {latest}")

    def submit(self, envelope: Unvalidated) -> CommandOutcome:
        """The ledger's outcome for ``envelope``: recorded already (a lost response), or now.

        The ledger itself answers an exact duplicate with the original outcome and
        any other envelope under a used command ID with COMMAND_ID_CONFLICT. An
        envelope it refused for its admission time is re-admitted and submitted again.
        """
        return self._submit_readmitting(envelope)

    def submit_all(self, envelopes: Sequence[Unvalidated]) -> list[CommandOutcome | LedgerError]:
        """``submit`` for several envelopes at once: each answered with its outcome, or the error ``submit`` would
        have raised for it alone (``queue_all``, then ``answers``)."""
        return self.answers(self.queue_all(envelopes))

    @contextmanager
    def admitting_together(self) -> Iterator[Together]:
        """A turn to admit several envelopes at one time (``Together.admitted_at_ms``) and queue them together
        (``Together.queue``). Turns queue in the order their times were taken, whatever order their envelopes are
        stored in, so no turn's command is refused for its admission time because of another turn's; a caller
        that takes no turn (``submit``) may still overtake them, and ``answers`` admits those again."""
        with self._ordering:
            together = Together(self._turns, self._turns.take(), self.now_ms(), self.queue_all)
        try:
            yield together
        finally:
            together.pass_turn()

    def queue_all(self, envelopes: Sequence[Unvalidated]) -> Queued:
        """Hand the owner the envelopes this gateway has just admitted, side by side, earliest admission first, so
        they share group commits; the others are left to ``answers``, which waits for every one."""
        queued = Queued(envelopes, [None] * len(envelopes))
        if not isinstance(self.ledger, LedgerOwner):
            return queued
        admitted = sorted(((index, command) for index, envelope in enumerate(envelopes)
                           if (command := self._take_admitted(envelope)) is not None),
                          key=lambda item: item[1].envelope.admitted_at_ms)
        try:
            futures = self.ledger.submit_all_admitted([command for _, command in admitted])
        except LedgerError:  # one of them may not be submitted at all: each is refused on its own
            return queued
        for (index, _), future in zip(admitted, futures):
            queued.futures[index] = future
        return queued

    def answers(self, queued: Queued) -> list[CommandOutcome | LedgerError]:
        """Each queued envelope's outcome or refusal. One the ledger refused for its admission time (another
        caller's command overtook it) or as a conflict (re-admitted meanwhile), and one never queued, is submitted
        on its own, as ``submit`` does."""
        return [self._answer(envelope, future) for envelope, future in zip(queued.envelopes, queued.futures)]

    def _answer(self, envelope: Unvalidated, future: Future[CommandOutcome] | None) -> CommandOutcome | LedgerError:
        if future is not None:
            try:
                return future.result()
            except LedgerError as error:
                if error.code not in (ErrorCode.ADMISSION_TIME_REGRESSED, ErrorCode.COMMAND_ID_CONFLICT):
                    return error
        try:
            return self._submit_readmitting(envelope)
        except LedgerError as error:
            return error

    def _submit_readmitting(self, envelope: Unvalidated) -> CommandOutcome:
        for _ in range(MAX_READMISSIONS):
            try:
                return self._submit_once(envelope)
            except LedgerError as error:
                if error.code == ErrorCode.ADMISSION_TIME_REGRESSED:
                    envelope = self._readmit(envelope)
                elif error.code == ErrorCode.COMMAND_ID_CONFLICT and (readmitted := self._readmitted(envelope)):
                    envelope = readmitted  # answered as a duplicate
                else:
                    raise
        return self._submit_once(envelope)

    def _submit_once(self, envelope: Unvalidated) -> CommandOutcome:
        """Hand an envelope this gateway admitted to the owner as the admitted command, not to be admitted again.

        Only a ``LedgerOwner`` itself takes admitted commands: a ledger that wraps one sees every envelope.
        """
        if isinstance(envelope, dict):  # anything else the ledger refuses as malformed
            require_not_owners(envelope.get("command_type"), envelope.get("actor_id"))
        command = self._take_admitted(envelope)
        if command is not None and isinstance(self.ledger, LedgerOwner):
            return self.ledger.submit_admitted(command)
        return self.ledger.submit(envelope)

    def _remember(self, envelope: Unvalidated, command: AdmittedCommand) -> None:
        if len(self._admitted) >= MAX_REMEMBERED_ADMISSIONS:
            self._admitted.clear()
        self._admitted[envelope["command_id"]] = (envelope, command)

    def _take_admitted(self, envelope: Unvalidated) -> AdmittedCommand | None:
        """The command admitted from this very envelope object; an envelope loaded or rebuilt since is admitted anew."""
        command_id = envelope.get("command_id")
        remembered = self._admitted.get(command_id) if isinstance(command_id, str) else None
        if remembered is None or remembered[0] is not envelope:
            return None
        self._admitted.pop(envelope["command_id"], None)
        return remembered[1]

    def _readmitted(self, envelope: Unvalidated) -> Unvalidated | None:
        """The stored envelope, if another thread re-admitted this command ID since ``envelope`` was loaded."""
        stored = self.envelopes.load(envelope["command_id"])
        return stored if stored is not None and canonical_bytes(stored) != canonical_bytes(envelope) else None

    def _readmit(self, refused: Unvalidated) -> Unvalidated:
        """A fresh admission time for an envelope the ledger never journalled; the stored copy is replaced.

        The ledger answers duplicates before it checks time, so a refusal for time proves it holds no
        outcome for this command ID. Under the lock, a thread that finds the stored envelope already
        re-admitted by another submits that one, so one command ID never reaches the ledger as two.
        """
        with self._readmitting:
            readmitted = self._readmitted(refused)
            if readmitted is not None:
                return readmitted
            fresh = {**refused, "admitted_at_ms": max(self.now_ms(), self.ledger.admission_floor_ms())}
            command = admit(fresh)
            self.envelopes.replace(fresh, canonical=command.canonical)
            self._remember(fresh, command)
            return fresh

    def execute(self, command_type: str, payload: Unvalidated, *, actor_id: str, command_id: str | None = None,
                expected: Iterable[Unvalidated] = (), evidence: Iterable[str] = ()) -> CommandOutcome:
        return self.submit(self.envelope(command_type, payload, actor_id=actor_id, command_id=command_id or new_id(),
                                         expected=expected, evidence=evidence))

    def execute_once(self, command_id: str, request: Callable[[], Unvalidated], *,
                     minted: Iterable[str] = ()) -> CommandOutcome:
        """For a command ID derived from its input: a redelivered input gets the first delivery's command.

        ``request`` returns ``execute``'s keyword arguments. The payload keys named in ``minted`` hold
        what the first delivery brought (a caller's request ID), which the stored envelope keeps. A
        stored envelope the ledger has not journalled is submitted only for the same input: the same
        envelope apart from ``minted`` and its admission time, which must not lie ahead of this clock.
        A journalled command answers only a request of the same type by the same actor. Otherwise the
        answer is ``COMMAND_ID_CONFLICT``. The envelope store is a file tree that a recovery restores from
        a backup, and no other actor's command may stand in for this input (docs/adr/0078, 0079).
        """
        stored = self.envelopes.load(command_id)
        if stored is None:
            return self.execute(command_id=command_id, **request())
        recorded = self.ledger.resolve(command_id)
        if recorded is not None:
            _require_same_author(journalled_envelope(self.ledger, recorded), request())
            return recorded
        _require_same_input(stored, _request(**request()), frozenset(minted))
        self.require_not_ahead(stored)
        return self.submit(stored)

    def existing(self, family: str, record_key: str, what: str) -> Record:
        """A record an input refers to; when it is missing the input is refused before admission."""
        record = self.ledger.get(family, record_key)
        if record is None:
            raise LedgerError(ErrorCode.NOT_FOUND, f"{what} does not exist (yet)")
        return record

    def now_ms(self) -> int:
        """Admission time: this process's clock, never running backwards."""
        with self._lock:
            self._last_ms = max(self._last_ms, self._clock())
            return self._last_ms


def journalled_envelope(ledger: Ledger, outcome: CommandOutcome) -> Unvalidated:
    """The envelope the ledger journalled for ``outcome``, which it answered from its journal."""
    entry = ledger.journal_entry(outcome.sequence)
    assert entry is not None, f"the ledger answered {outcome.command_id} at {outcome.sequence}, past its journal"
    envelope: Unvalidated = entry["envelope"]
    return envelope


def require_not_owners(command_type: Any, actor_id: Any) -> None:
    """``OWNER_ONLY`` for the ledger's own actor and for a command only the owner submits, in its own process."""
    if actor_id == LEDGER_OWNER:
        raise LedgerError(ErrorCode.OWNER_ONLY, f"{LEDGER_OWNER} is the ledger's own actor: only the owner acts as it")
    try:
        owner_only = isinstance(command_type, str) and spec_for(command_type).owner_only
    except LedgerError:  # an unknown type: admission refuses it
        return
    if owner_only:
        raise LedgerError(ErrorCode.OWNER_ONLY, f"only the ledger's owner submits {command_type}, in its own process")


def _request(*, command_type: str, payload: Unvalidated, actor_id: str, expected: Iterable[Unvalidated] = (),
             evidence: Iterable[str] = ()) -> Unvalidated:
    """``execute``'s keyword arguments as the request an envelope is built from."""
    return {"command_type": command_type, "payload": payload, "actor_id": actor_id,
            "expected_revisions": list(expected), "evidence_hashes": list(evidence)}


def _build(command_id: str, request: Unvalidated, **admission: Any) -> Unvalidated:
    return build_envelope(request["command_type"], request["payload"], command_id=command_id,
                          actor_id=request["actor_id"], expected_revisions=request["expected_revisions"],
                          evidence_hashes=request["evidence_hashes"], **admission)


def _require_same_input(stored: Unvalidated, request: Unvalidated, minted: frozenset[str]) -> None:
    rebuilt = _build(stored["command_id"], request, admitted_at_ms=stored["admitted_at_ms"],
                     ruleset_version=stored["ruleset_version"])

    def identity(envelope: Unvalidated) -> Unvalidated:
        payload = envelope["payload"]
        return {**envelope, "payload": {key: None if key in minted else value for key, value in payload.items()}}

    if identity(rebuilt) != identity(stored):
        raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT,
                          f"command {stored['command_id']} was stored for another input")


def _require_same_author(journalled: Unvalidated, request: Unvalidated) -> None:
    """The journalled command under an input's ID is this input's kind of command, by this input's actor.

    Its other terms may differ from what the request builds now (the revisions it expected have moved
    on; a journal older than the derived period IDs holds a minted one), so only these two are compared.
    """
    if (journalled["actor_id"], journalled["command_type"]) != (request["actor_id"], request["command_type"]):
        raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT,
                          f"command {journalled['command_id']} was journalled for another actor or command")
