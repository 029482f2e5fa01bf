"""Console actions as ledger commands: one envelope per form, stored first, answered once on every retry.

A form carries the command ID chosen when it was rendered. The ledger journals
the command under an ID derived from the signed-in user's actor and that form's
ID (``journalled_id``), as the internal API does for workers: a form's ID names
a command of its own user only, so no user can choose the ID a webhook, a grant
or another user's command is journalled under (docs/adr/0079). A form takes the
answer path a worker's request takes (``ledger_engine.adapters.command_answers``,
docs/adr/0097): a form the ledger journalled is answered from the journal, one
stored and not journalled yet submits its stored envelope, and only a new one is
built, stored and submitted, so the ledger executes it once
(docs/spec/engine-and-journal.md §4). The same command ID with a different
request is ``COMMAND_ID_CONFLICT``. What is the console's own stays here: the
step-up proof a new approval carries, and the evidence bytes a new command cites.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ledger_engine.adapters import command_answers
from ledger_engine.adapters.command_answers import CONSOLE
from ledger_engine.adapters.gateway import CommandGateway, Unstored, new_id
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.canonical import sha256_hex
from ledger_engine.open_json import Unvalidated
from porto_console.ledger import gateway


@dataclass(frozen=True)
class CommandRequest:
    """What an action asks the ledger to do; the actor and the IDs come from the console."""

    command_type: str
    payload: Unvalidated
    expected_revisions: list[Unvalidated] = field(default_factory=list)
    evidence: tuple[bytes, ...] = ()
    """What the payload cites by digest. Stored when the command is submitted, not when it is built, so a
    re-posted form refused as another request leaves nothing behind."""

    @property
    def evidence_hashes(self) -> list[str]:
        return [sha256_hex(data) for data in self.evidence]


class StateMovedOn(Exception):
    """The ledger state a request is built from moved on since the form was shown; ``str`` is what to do."""


def cited_note(payload: Unvalidated, note: str) -> tuple[bytes, ...]:
    """A person's note as the evidence a command cites: ``payload`` gets its digest (``note_digest``), and the
    bytes are what the request stores. No note, nothing cited."""
    if not note:
        return ()
    data = note.encode()
    payload["note_digest"] = sha256_hex(data)
    return (data,)


def new_command_id() -> str:
    return new_id()


journalled_id = CONSOLE.journalled_id
"""``journalled_id(actor_id, form_id)``: the ID the ledger journals a console user's form's command under."""


def submit(actor_id: str, form_id: str, request: CommandRequest, *,
           prove: Callable[[Unvalidated], Unvalidated] | None = None) -> CommandOutcome:
    """Hand the form's command to the ledger once, whatever number of times the form arrives.

    The command is journalled under ``journalled_id(actor_id, form_id)`` and answered as any edge's command is
    (``command_answers.answer``). ``prove`` adds a step-up proof to a new envelope's payload; a retry finds the
    envelope journalled or stored with its proof, and proves nothing again. Raises ``LedgerError`` for what is
    refused before admission.
    """
    admission = gateway()
    return command_answers.answer(admission, CONSOLE, form_id, asked(actor_id, request),
                                  new=lambda command_id: _new(admission, actor_id, command_id, request, prove))


def require_same_request(held: Unvalidated, actor_id: str, request: CommandRequest) -> None:
    """Refuse ``request`` where the envelope stored or journalled under its ID asks for something else.

    The one check every edge makes (``command_answers.require_same_request``); a console form does not repeat the
    expected revisions: they guard the state the command was judged on, the command itself moves them on, and a
    form built again reads them as they are now.
    """
    command_answers.require_same_request(CONSOLE, held, asked(actor_id, request))


def asked(actor_id: str, request: CommandRequest) -> command_answers.Request:
    """What ``request`` asks the ledger, as ``actor_id``."""
    return command_answers.Request(actor_id, request.command_type, request.payload, request.expected_revisions,
                                   request.evidence_hashes)


def _new(admission: CommandGateway, actor_id: str, command_id: str, request: CommandRequest,
         prove: Callable[[Unvalidated], Unvalidated] | None) -> Unstored:
    """A new envelope for the form, admitted, its evidence stored and, for an approval, its payload proved."""
    for data in request.evidence:
        admission.evidence.put(data)
    payload = prove(request.payload) if prove else request.payload
    return admission.built(request.command_type, payload, actor_id=actor_id, command_id=command_id,
                              expected=request.expected_revisions, evidence=request.evidence_hashes)
