"""One answer path for a command sent at an edge: a person's form in the console or a worker's request to the
internal API.

An edge is sent an ID with each request. The ledger journals the command under an ID derived from the edge's
name, the actor and that ID (``Edge.journalled_id``), so no actor and no other edge can reach it (docs/adr/0079).
Whoever sent it, the answer is found the same way (``answer``, docs/adr/0097):

- journalled under that ID for this request: the journalled outcome, found by command ID. The owner does not
  admit the envelope again: the journal holds what it admitted.
- stored under that ID for this request, not journalled yet: that envelope, dated no later than this clock allows
  (``CommandGateway.require_not_ahead``), submitted through the gateway.
- neither: a new envelope for that ID, built, admitted and checked by the edge (``new``), stored, then submitted.

"For this request" is one check (``require_same_request``), made against whatever the ID holds; another request
there is ``COMMAND_ID_CONFLICT`` and nothing is journalled. An answer lost to a halted ledger is found by command ID.

What is an edge's own stays at the edge: the console's step-up proof and evidence bytes; the internal API's
credential, dispatch and signed-bytes checks (``check``, which refuses a new and a stored envelope alike).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Callable, Sequence

from ledger_engine.adapters.gateway import CommandGateway, Ledger, Unstored, derived_command_id, journalled_envelope
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.canonical import canonical_bytes
from ledger_engine.domain.step_up import without_proof
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import Unvalidated

Check = Callable[[Unvalidated], None]
New = Callable[[str], Unvalidated | Unstored]


@dataclass(frozen=True, slots=True)
class Edge:
    """Where commands come into the ledger from outside it."""

    name: str
    """Part of every ID derived here, so one edge's IDs never name another edge's commands."""
    compares_revisions: bool
    """Whether a retry must expect the revisions the first request expected. A console form is built again from
    the ledger as it is now, so once its command is journalled the revisions it reads have moved on; a worker sends
    its body again as it was."""

    def journalled_id(self, actor_id: str, sent_id: str) -> str:
        """The ID the ledger journals ``actor_id``'s command under, sent to this edge as ``sent_id``."""
        return derived_command_id(self.name, actor_id, sent_id)


CONSOLE = Edge("console", compares_revisions=False)
INTERNAL_API = Edge("internal-api", compares_revisions=True)


@dataclass(frozen=True, slots=True)
class Request:
    """What a command asks the ledger, as its edge was sent it: every retry must ask it again."""

    actor_id: str
    command_type: str
    payload: Unvalidated
    expected_revisions: Sequence[Unvalidated] = ()
    evidence_hashes: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class Journalled:
    """A request's command as the ledger journalled it: its outcome and the envelope the owner admitted."""

    outcome: CommandOutcome
    envelope: Unvalidated


def answer(admission: CommandGateway, edge: Edge, sent_id: str, request: Request, *, new: New,
           check: Check | None = None) -> CommandOutcome:
    """The ledger's outcome for ``request``, sent to ``edge`` as ``sent_id``: journalled already, or now."""
    prepared = prepare(admission, edge, sent_id, request, new=new, check=check)
    if isinstance(prepared, Journalled):
        return prepared.outcome
    return submit(admission, admission.keep(prepared))


def prepare(admission: CommandGateway, edge: Edge, sent_id: str, request: Request, *, new: New,
            check: Check | None = None) -> Journalled | Unvalidated | Unstored:
    """The request's journalled command, or else the envelope to submit for it: the one stored under its ID, or a
    ``new`` one built for that ID (admitted and checked, for ``admission.keep`` to store)."""
    command_id = edge.journalled_id(request.actor_id, sent_id)
    journalled = journalled_for(admission.ledger, edge, command_id, request)
    if journalled is not None:
        return journalled
    stored = stored_for(admission, edge, command_id, request, check)
    return stored if stored is not None else new(command_id)


def journalled_for(ledger: Ledger, edge: Edge, command_id: str, request: Request) -> Journalled | None:
    """The command journalled under ``command_id``, if any, provided it is ``request``'s."""
    outcome = ledger.resolve(command_id)
    if outcome is None:
        return None
    envelope = journalled_envelope(ledger, outcome)
    require_same_request(edge, envelope, request)
    return Journalled(outcome, envelope)


def stored_for(admission: CommandGateway, edge: Edge, command_id: str, request: Request,
               check: Check | None) -> Unvalidated | None:
    """The envelope stored under ``command_id``, if any, provided it is ``request``'s, not dated ahead, and passes
    the edge's ``check``."""
    stored = admission.envelopes.load(command_id)
    if stored is None:
        return None
    require_same_request(edge, stored, request)
    admission.require_not_ahead(stored)
    if check is not None:
        check(stored)
    return stored


def submit(admission: CommandGateway, envelope: Unvalidated) -> CommandOutcome:
    """``admission.submit`` for a stored envelope, its answer ``answered``.

    An answer lost to a halted ledger is found by command ID: as this submit's own answer (not a duplicate) unless
    the command was journalled before it began.
    """
    head_before = admission.ledger.head().sequence
    try:
        outcome = admission.submit(envelope)  # may re-admit it with a fresh admission time (docs/adr/0012)
    except LedgerError as error:
        resolved = admission.ledger.resolve(envelope["command_id"]) if error.code == ErrorCode.LEDGER_HALTED else None
        if resolved is None:
            raise
        outcome = replace(resolved, duplicate=False) if resolved.sequence > head_before else resolved
    return answered(admission, outcome, submitted=envelope)


def answered(admission: CommandGateway, outcome: CommandOutcome, *, submitted: Unvalidated | None = None
             ) -> CommandOutcome:
    """``outcome``, unless the ledger journalled another envelope under its command ID than the one stored for it
    (and so checked against the request). The envelope just ``submitted`` is the stored one unless the gateway
    re-admitted it meanwhile, so the store is read again only when the journalled one is not it."""
    journalled = journalled_envelope(admission.ledger, outcome)
    if journalled != submitted and journalled != admission.envelopes.load(outcome.command_id):
        raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT,
                          f"command {outcome.command_id} was journalled for another request")
    return outcome


def require_same_request(edge: Edge, held: Unvalidated, request: Request) -> None:
    """``COMMAND_ID_CONFLICT`` where the envelope journalled or stored under a request's ID asks for another thing.

    Compared: the actor, the command type, the payload (a step-up proof aside: it authorises the command, it is not
    what the command asks) and the evidence; the expected revisions only at an edge that compares them
    (``Edge.compares_revisions``). Not the admission time, nor the ruleset: a retry is the same request later.
    """
    if _terms(edge, held) != _terms(edge, asdict(request)):
        raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT,
                          f"command {held['command_id']} was already used for another request")


def _terms(edge: Edge, asked: Unvalidated) -> bytes:
    """What ``require_same_request`` compares of an envelope or a request, in the order an envelope keeps it."""
    terms = {"actor_id": asked["actor_id"], "command_type": asked["command_type"],
             "payload": without_proof(asked["payload"]), "evidence_hashes": sorted(set(asked["evidence_hashes"]))}
    if edge.compares_revisions:
        terms["expected_revisions"] = sorted(asked["expected_revisions"], key=lambda item: (item["cf"], item["key"]))
    return canonical_bytes(terms)
