"""The command registry: each command type has one closed payload model and one rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, ValidationError

from ledger_engine.domain.changes import Changes
from ledger_engine.envelope import CommandEnvelope, pydantic_error_code
from ledger_engine.errors import ErrorCode, LedgerError


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


Rule = Callable[[RuleContext, Any], dict[str, Any]]


@dataclass(frozen=True)
class CommandSpec:
    command_type: str
    payload_model: type[Payload]
    rule: Rule
    roles: frozenset[str]

    def parse_payload(self, document: dict[str, Any]) -> Payload:
        try:
            return self.payload_model.model_validate(document)
        except ValidationError as error:
            raise LedgerError(*pydantic_error_code(error, ErrorCode.INVALID_PAYLOAD)) from None


_REGISTRY: dict[str, CommandSpec] = {}


def command(command_type: str, *, payload: type[Payload], roles: set[str]):
    """Register ``rule`` as the only way to apply ``command_type``."""

    def register(rule: Rule) -> Rule:
        assert command_type not in _REGISTRY, f"{command_type} registered twice"
        _REGISTRY[command_type] = CommandSpec(command_type, payload, rule, frozenset(roles))
        return rule

    return register


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
