"""Reading records that must exist, and moving a record's ``state`` along the transitions its machine allows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger_engine.domain.changes import Changes, require, require_present
from ledger_engine.domain.view import Shape, with_fields
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import JournalEvent


def load(changes: Changes, record_key: str, what: str, shape: type[Shape], family: str = STATE) -> Shape:
    """The record's data, of record type ``shape``; NOT_FOUND names ``what`` is missing."""
    record = require_present(changes.get(family, record_key), ErrorCode.NOT_FOUND, f"{what} does not exist")
    return record.data_as(shape)


@dataclass(frozen=True)
class StateMachine:
    """Which ``state`` may follow which; every move is recorded as ``event_type``."""

    event_type: str
    transitions: dict[str, frozenset[str]]

    def allows(self, current: str, state: str) -> bool:
        return state in self.transitions[current]

    def move(self, changes: Changes, record_key: str, record: Shape, state: str, *,
             subject: JournalEvent, **fields: Any) -> Shape:
        """Write the record in ``state`` with ``fields``; the event carries ``subject`` and both states."""
        current = record["state"]
        require(self.allows(current, state), ErrorCode.INVALID_STATE, f"{record_key} is {current}; it cannot become {state}")
        updated = with_fields(record, state=state, **fields)
        changes.put_state(record_key, updated)
        changes.event(self.event_type, **subject, from_state=current, to_state=state)
        return updated
