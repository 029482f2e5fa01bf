"""Pausing and resuming dispatch in tests, as a person does: journalled commands, with step-up where the rules
ask for it (``ledger_engine/domain/commands/dispatch_switch.py``).

The owner's genesis must trust ``key`` (the test step-up key unless stated; the demo ledger trusts the demo's).
"""

from __future__ import annotations

import uuid
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger_engine.application.envelopes import build_envelope
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.step_up import with_proof
from tests.support.step_up import PRIVATE_KEY


def envelope(owner: LedgerOwner, command_type: str, payload: dict[str, Any], *, actor: str,
             key: Ed25519PrivateKey | None = None) -> dict[str, Any]:
    """An envelope admitted just after the ledger's last one; with ``key``, carrying a proof signed by it."""
    built = build_envelope(command_type, payload, command_id=str(uuid.uuid4()), actor_id=actor,
                           admitted_at_ms=owner.admission_floor_ms() + 1)
    return with_proof(built, key) if key is not None else built


def accepted(outcome: CommandOutcome) -> CommandOutcome:
    assert outcome.accepted, outcome.result
    return outcome


def pause(owner: LedgerOwner, *, actor: str, reason: str = "paused by a test",
          key: Ed25519PrivateKey = PRIVATE_KEY) -> CommandOutcome:
    return accepted(owner.submit(envelope(owner, "PauseDispatch", {"reason": reason}, actor=actor, key=key)))


def resume(owner: LedgerOwner, *, requester: str, approver: str, reason: str = "resumed by a test",
           key: Ed25519PrivateKey = PRIVATE_KEY) -> CommandOutcome:
    resume_id = f"resume-{uuid.uuid4().hex[:12]}"
    accepted(owner.submit(envelope(owner, "RequestDispatchResume", {"resume_id": resume_id, "reason": reason},
                                   actor=requester)))
    return accepted(owner.submit(envelope(owner, "DecideDispatchResume",
                                          {"resume_id": resume_id, "decision": "approve"}, actor=approver, key=key)))
