"""Console actions as ledger commands: one envelope per form, stored first, reused on every retry.

A form carries the command ID chosen when it was rendered. The admission
gateway (``ledger_engine.adapters.gateway``) builds the envelope the first
time and stores it before the ledger sees it; a double submit or a retry gets
the stored envelope back, so the ledger answers with the original outcome
instead of executing twice (seed 000, "Command envelope and sequence"). The
same command ID with a different request is ``COMMAND_ID_CONFLICT``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger_engine.adapters.gateway import new_id
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.errors import ErrorCode, LedgerError
from porto_console.ledger import gateway


@dataclass(frozen=True)
class CommandRequest:
    """What an action asks the ledger to do; the actor and the IDs come from the console."""

    command_type: str
    payload: dict[str, Any]
    expected_revisions: list[dict[str, Any]] = field(default_factory=list)
    evidence_hashes: list[str] = field(default_factory=list)


def new_command_id() -> str:
    return new_id()


def submit(actor_id: str, command_id: str, request: CommandRequest) -> CommandOutcome:
    """Hand the form's command to the ledger once, whatever number of times the form arrives.

    Raises ``LedgerError`` for what is refused before admission. If the answer
    is lost to a halted ledger, the command ID resolves it.
    """
    admission = gateway()
    envelope = admission.envelope(request.command_type, request.payload, actor_id=actor_id, command_id=command_id,
                                  expected=request.expected_revisions, evidence=request.evidence_hashes)
    try:
        return admission.submit(envelope)
    except LedgerError as error:
        resolved = admission.ledger.resolve(command_id) if error.code == ErrorCode.LEDGER_HALTED else None
        if resolved is None:
            raise
        return resolved
