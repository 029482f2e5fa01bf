"""Console actions as ledger commands: one envelope per form, stored first, reused on every retry.

A form carries the command ID chosen when it was rendered. The ledger journals
the command under an ID derived from the signed-in user's actor and that form's
ID (``journalled_id``), as the internal API does for workers: a form's ID names
a command of its own user only, so no user can choose the ID a webhook, a grant
or another user's command is journalled under (docs/adr/0079). The admission
gateway (``ledger_engine.adapters.gateway``) builds the envelope the first
time and stores it before the ledger sees it; a double submit or a retry gets
the stored envelope back, so the ledger answers with the original outcome
instead of executing twice (docs/spec/engine-and-journal.md §4). The
same command ID with a different request is ``COMMAND_ID_CONFLICT``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ledger_engine.adapters.gateway import derived_command_id, new_id
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.canonical import sha256_hex
from ledger_engine.domain.step_up import without_proof
from ledger_engine.errors import ErrorCode, LedgerError
from porto_console.ledger import gateway, owner


@dataclass(frozen=True)
class CommandRequest:
    """What an action asks the ledger to do; the actor and the IDs come from the console."""

    command_type: str
    payload: dict[str, Any]
    expected_revisions: list[dict[str, Any]] = field(default_factory=list)
    evidence: tuple[bytes, ...] = ()
    """What the payload cites by digest. Stored when the command is submitted, not when it is built, so a
    re-posted form refused as another request leaves nothing behind."""

    @property
    def evidence_hashes(self) -> list[str]:
        return [sha256_hex(data) for data in self.evidence]


class StateMovedOn(Exception):
    """The ledger state a request is built from moved on since the form was shown; ``str`` is what to do."""


def new_command_id() -> str:
    return new_id()


def journalled_id(actor_id: str, form_id: str) -> str:
    """The ID the ledger journals a console user's command under: no other actor or input can reach it."""
    return derived_command_id("console", actor_id, form_id)


def submit(actor_id: str, form_id: str, request: CommandRequest, *,
           prove: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> CommandOutcome:
    """Hand the form's command to the ledger once, whatever number of times the form arrives.

    The command is journalled under ``journalled_id(actor_id, form_id)``. ``prove`` adds a
    step-up proof to the payload; a retry of an approval whose envelope is already stored
    (with its proof) submits that envelope as it is.
    Raises ``LedgerError`` for what is refused before admission. If the answer
    is lost to a halted ledger, the command ID resolves it: as this submit's own
    answer (not a duplicate) unless the command was journalled before it began.
    """
    admission = gateway()
    command_id = journalled_id(actor_id, form_id)
    envelope = _stored_approval(admission, actor_id, command_id, request) if prove else None
    if envelope is None:
        for data in request.evidence:
            admission.evidence.put(data)
        payload = prove(request.payload) if prove else request.payload
        envelope = admission.envelope(request.command_type, payload, actor_id=actor_id, command_id=command_id,
                                      expected=request.expected_revisions, evidence=request.evidence_hashes)
    head_before = owner().head().sequence
    try:
        return admission.submit(envelope)
    except LedgerError as error:
        resolved = admission.ledger.resolve(command_id) if error.code == ErrorCode.LEDGER_HALTED else None
        if resolved is None:
            raise
        return replace(resolved, duplicate=False) if resolved.sequence > head_before else resolved


def require_same_request(stored: dict[str, Any], actor_id: str, request: CommandRequest) -> None:
    """Refuse ``request`` where the envelope stored or journalled under its ID asks for something else.

    Compared: the actor, the command type, the payload (a step-up proof aside) and the evidence.
    Not the expected revisions: they guard the state the command was judged on, the command itself
    moves them on, and a form built again reads them as they are now.
    """
    asked = (actor_id, request.command_type, request.payload, sorted(set(request.evidence_hashes)))
    held = (stored["actor_id"], stored["command_type"], without_proof(stored["payload"]), stored["evidence_hashes"])
    if held != asked:
        raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT, f"command {stored['command_id']} is another request")


def _stored_approval(admission, actor_id: str, command_id: str, request: CommandRequest) -> dict[str, Any] | None:
    """The stored envelope of this very approval (same actor and request, proof aside), if one is stored."""
    stored = admission.envelopes.load(command_id)
    if stored is None:
        return None
    require_same_request(stored, actor_id, request)
    admission.require_not_ahead(stored)
    return stored
