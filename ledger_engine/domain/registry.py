"""The command registry: each command type has one closed payload model and one rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Any, Callable, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ledger_engine.domain import step_up as step_up_proofs
from ledger_engine.domain.changes import Changes
from ledger_engine.domain.ruleset import OWNER_ROLE
from ledger_engine.envelope import CommandEnvelope, pydantic_error_code
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import CommandResult, Unvalidated


class Payload(BaseModel):
    """Base of every payload model: closed, strict and immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


@dataclass(frozen=True)
class RuleContext:
    """Everything a rule may know about the command being applied."""

    envelope: CommandEnvelope
    sequence: int
    changes: Changes

    @property
    def actor_id(self) -> str:
        return self.envelope.actor_id

    @property
    def now_ms(self) -> int:
        return self.envelope.admitted_at_ms

    @property
    def command_id(self) -> str:
        return self.envelope.command_id

    def states_revision_of(self, family: str, key: str) -> bool:
        """Whether the caller stated an expected revision for this record."""
        return any(item.cf == family and item.key == key for item in self.envelope.expected_revisions)


Rule = Callable[[RuleContext, Any], CommandResult]
# A rule as its module declares it, with its own payload model: registering it leaves its type as it was.
RuleT = TypeVar("RuleT", bound=Rule)
# Which payloads of a command type a person approves with a fresh second factor (ledger_engine.domain.step_up).
StepUp = Callable[[Any], bool]


@dataclass(frozen=True)
class CommandSpec:
    command_type: str
    payload_model: type[Payload]
    rule: Rule
    roles: frozenset[str]
    step_up: StepUp | None = None
    cites_evidence: bool = False  # its envelope names stored evidence bytes in ``evidence_hashes``

    @property
    def owner_only(self) -> bool:
        """Only the ledger's owner submits this command, in process, as its own actor: no gateway or API takes it."""
        return OWNER_ROLE in self.roles

    @property
    def human_approval(self) -> bool:
        """Some payload of this type needs a person's step-up proof, so no worker may ever submit it."""
        return self.step_up is not None

    def parse_payload(self, document: Unvalidated) -> Payload:
        if self.step_up is not None:
            document = self._without_valid_proof(document)
        try:
            return self.payload_model.model_validate(document)
        except ValidationError as error:
            raise LedgerError(*pydantic_error_code(error, ErrorCode.INVALID_PAYLOAD)) from None

    def requires_step_up(self, payload: Payload) -> bool:
        return self.step_up is not None and self.step_up(payload)

    @staticmethod
    def _without_valid_proof(document: Unvalidated) -> Unvalidated:
        """A proof field must be well formed; the rest is the command's own payload."""
        if not isinstance(document, dict) or step_up_proofs.PROOF_FIELD not in document:
            return document
        try:
            step_up_proofs.StepUpProof.model_validate(document[step_up_proofs.PROOF_FIELD])
        except ValidationError as error:
            code, detail = pydantic_error_code(error, ErrorCode.INVALID_PAYLOAD)
            raise LedgerError(code, f"{step_up_proofs.PROOF_FIELD}.{detail}") from None
        return step_up_proofs.without_proof(document)


_REGISTRY: dict[str, CommandSpec] = {}


def command(command_type: str, *, payload: type[Payload], roles: AbstractSet[str], step_up: bool | StepUp = False,
            cites_evidence: bool = False) -> Callable[[RuleT], RuleT]:
    """Register ``rule`` as the only way to apply ``command_type``.

    ``step_up`` declares that a person approves this command with a fresh
    second factor: ``True`` for every payload, or a predicate on the parsed
    payload (an approval step, say). The ledger then refuses the command
    without a valid proof bound to it, whatever path it came by.

    ``cites_evidence`` declares that its envelopes name evidence bytes, stored
    before them, in ``evidence_hashes`` (signed transactions, chain
    observations, signed documents).

    A command the role ``ruleset.OWNER_ROLE`` may submit is the owner's alone
    (``CommandSpec.owner_only``): no other role may, and no person approves it.
    """
    assert OWNER_ROLE not in roles or (roles == {OWNER_ROLE} and not step_up), \
        f"{command_type}: a command of the ledger's owner is its alone"
    needs = (lambda _payload: True) if step_up is True else (step_up or None)

    def register(rule: RuleT) -> RuleT:
        assert command_type not in _REGISTRY, f"{command_type} registered twice"
        _REGISTRY[command_type] = CommandSpec(command_type, payload, _guarded(rule, needs), frozenset(roles), needs,
                                              cites_evidence)
        return rule

    return register


def _guarded(rule: Rule, needs: StepUp | None) -> Rule:
    """The rule, behind the step-up check its declaration asks for; a proof that is present is always checked."""
    if needs is None:
        return rule

    def guarded(ctx: RuleContext, payload: Any) -> CommandResult:
        if needs(payload) or step_up_proofs.PROOF_FIELD in ctx.envelope.payload:
            step_up_proofs.require_proof(ctx)
        return rule(ctx, payload)

    return guarded


def spec_for(command_type: str) -> CommandSpec:
    _load_commands()
    try:
        return _REGISTRY[command_type]
    except KeyError:
        raise LedgerError(ErrorCode.UNKNOWN_COMMAND_TYPE, f"unknown command type {command_type!r}") from None


def registered_types() -> list[str]:
    _load_commands()
    return sorted(_REGISTRY)


def _load_commands() -> None:
    import ledger_engine.domain.commands  # noqa: F401  (registers every command module)
