"""Running an action: the screen's role check, step-up, one submit, and telling the user what happened."""

from __future__ import annotations

from typing import Callable

from django.contrib import messages

from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.registry import spec_for
from ledger_engine.errors import LedgerError
from porto_console.console import commands, stepup
from porto_console.console.commands import CommandRequest
from porto_console.console.roles import actor_id, command_roles, may_submit, require_command
from porto_console.ledger import owner


class ActionRefused(Exception):
    """Nothing was submitted, or the ledger refused before admission; ``str`` is the reason, and ``code`` and
    ``detail`` the ledger's, when it refused, for a screen that says what to change in words."""

    def __init__(self, reason: str, code: str | None = None, detail: str = "") -> None:
        super().__init__(reason)
        self.code, self.detail = code, detail


def run(request, command_id: str, command_type: str, build: Callable[[], CommandRequest], *,
        step_up_token: str | None = None) -> CommandOutcome:
    """Submit the command ``build`` makes, as the signed-in user, once per command ID.

    A command the registry marks as a human approval is submitted only with a
    step-up proof, made once ``step_up_token`` proves a fresh authenticator
    code. A command ID the ledger already answered gets that answer back, and
    nothing is verified or submitted again, but only for the same request:
    another request under that ID is ``COMMAND_ID_CONFLICT``, so a view never
    acts on a re-posted form the ledger did not judge (docs/adr/0079). The one
    answer path (``commands.submit``) looks the ID up; only a build refused
    because the state moved on looks it up here, to give the answer that moved it.
    """
    require_command(request, command_type)
    actor = actor_id(request.user)
    try:
        command = _built(actor, command_id, build)
        if isinstance(command, CommandOutcome):
            return command
        assert command.command_type == command_type, (command.command_type, command_type)
        prove = _prover(request, commands.journalled_id(actor, command_id), command, step_up_token)
        return commands.submit(actor, command_id, command, prove=prove)
    except stepup.StepUpFailed as error:
        raise ActionRefused(str(error)) from None
    except LedgerError as error:
        raise ActionRefused(refusal(error), error.code, error.detail) from None


def refusal(error: LedgerError) -> str:
    """What the user is told of a command the ledger refused before admission."""
    return f"The ledger refused the command: {error.code} ({error.detail})"


def _built(actor: str, command_id: str, build: Callable[[], CommandRequest]) -> CommandRequest | CommandOutcome:
    """The form's command, or, when the state moved on since the form was shown (``StateMovedOn``), the ledger's
    answer to this form if it has one: the answered command moved it, and such a view acts on nothing but the
    form's ID."""
    try:
        return build()
    except commands.StateMovedOn:
        answered = owner().resolve(commands.journalled_id(actor, command_id))
        if answered is None:
            raise
        return answered


def needs_step_up(command: CommandRequest) -> bool:
    spec = spec_for(command.command_type)
    return spec.requires_step_up(spec.parse_payload(command.payload))


def _prover(request, command_id: str, command: CommandRequest, token: str | None) -> Callable | None:
    if not needs_step_up(command):
        return None
    return lambda payload: stepup.prove(request, token, command_id=command_id, command_type=command.command_type,
                                        payload=payload)


def report(request, outcome: CommandOutcome, done: str) -> None:
    """One message: what was done, or the ledger's reason for refusing, with the sequence either way."""
    where = f"sequence {outcome.sequence}"
    if outcome.duplicate:
        where += ", already submitted: this is the original answer"
    if outcome.accepted:
        messages.success(request, f"{done} ({where}).")
    else:
        messages.error(request, f"Not allowed: {outcome.code}: {outcome.result.get('detail', '')} ({where}).")


def run_form(request, form, command_type: str, build: Callable[[dict], CommandRequest], *, done: str,
             invalid: str) -> CommandOutcome | None:
    """Validate ``form``, ``run`` the command ``build`` makes of its data (with its authenticator code, if it
    has one), and leave one message saying what happened or why nothing was submitted. Returns the outcome,
    if there is one."""
    if not form.is_valid():
        messages.error(request, invalid)
        return None
    data = form.cleaned_data
    try:
        outcome = run(request, data["command_id"], command_type, lambda: build(data),
                      step_up_token=data.get("otp_token"))
    except ActionRefused as error:
        messages.error(request, str(error))
        return None
    report(request, outcome, done)
    return outcome


def approval_blockers(request, command_type: str, *, subject: str, status: str, awaiting: str,
                      requested_by: str, deed: str) -> list[str]:
    """Why this user cannot approve ``subject`` now; the ledger would refuse for the same reasons."""
    blockers = []
    if not may_submit(request.user, command_type):
        blockers.append(f"Approving needs the {' or '.join(sorted(command_roles(command_type)))} role.")
    if status != awaiting:
        blockers.append(f"The {subject} is {status}; only a {awaiting} {subject} can be approved.")
    if requested_by == actor_id(request.user):
        blockers.append(f"You {deed} this {subject}: another finance user must approve it (four eyes).")
    return blockers
