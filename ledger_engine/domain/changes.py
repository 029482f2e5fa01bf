"""What a rule returns: the records it sets, the events it records, the effects it intends.

A rule builds ``Changes`` while it reads; a ``Rejected`` raised at any point
discards them all. Rules never choose revisions or sequences: the executor does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, TypeVar

from ledger_engine.domain.view import Record, StateView
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import OUTBOX, STATE, UNIQUE
from ledger_engine.open_json import JournalEvent, RecordData
from ledger_engine.ordered import overlay_scan


class Rejected(Exception):
    """A business rejection: journalled with its stable code, changing nothing else."""

    def __init__(self, code: ErrorCode, detail: str = "") -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


T = TypeVar("T")


def require(condition: object, code: ErrorCode, detail: str) -> None:
    if not condition:
        raise Rejected(code, detail)


def require_present(value: T | None, code: ErrorCode, detail: str) -> T:
    """``value``, which must be there: a record that must exist, say."""
    if value is None:
        raise Rejected(code, detail)
    return value


@dataclass(frozen=True, slots=True)
class EffectIntent:
    """A durable request for an external effect, carried out after commit by a worker."""

    effect_id: str
    kind: str
    payload: RecordData


@dataclass
class Changes:
    """Pending writes of one command, readable back through ``view`` as it goes."""

    base: StateView
    writes: dict[tuple[str, str], RecordData | None] = field(default_factory=dict)
    events: list[JournalEvent] = field(default_factory=list)
    effects: list[EffectIntent] = field(default_factory=list)

    # Reading: a rule sees its own earlier writes.
    def get(self, family: str, key: str) -> Record | None:
        if (family, key) in self.writes:
            data = self.writes[(family, key)]
            if data is None:
                return None
            previous = self.base.get(family, key)
            return Record((previous.revision if previous else 0) + 1, data)
        return self.base.get(family, key)

    def scan(self, family: str, prefix: str) -> Iterator[tuple[str, Record]]:
        pending = {k: v for (f, k), v in self.writes.items() if f == family and k.startswith(prefix)}
        if not pending:
            return self.base.scan(family, prefix)
        return overlay_scan(self.base.scan(family, prefix), pending, lambda key: self.get(family, key))

    # Writing.
    def put_state(self, key: str, data: Mapping[str, Any]) -> None:
        self.writes[(STATE, key)] = _json_object(data)

    def claim_unique(self, key: str, owner: RecordData, code: ErrorCode,
                     detail: str | Callable[[RecordData], str]) -> None:
        """Take a uniqueness sentinel, rejecting with ``code`` if it is taken: ``detail`` says why, or builds
        that from the data of the sentinel's holder."""
        holder = self.get(UNIQUE, key)
        if holder is not None:
            raise Rejected(code, detail(holder.data) if callable(detail) else detail)
        self.writes[(UNIQUE, key)] = owner

    def release_unique(self, key: str) -> None:
        """Free a sentinel whose obligation has ended (an active session's, for example)."""
        self.writes[(UNIQUE, key)] = None

    def put_outbox(self, key: str, data: Mapping[str, Any]) -> None:
        self.writes[(OUTBOX, key)] = _json_object(data)

    def event(self, event_type: str, **fields: Any) -> None:
        self.events.append({"type": event_type, **fields})

    def effect(self, effect_id: str, kind: str, payload: RecordData) -> None:
        self.effects.append(EffectIntent(effect_id, kind, payload))


def _json_object(data: Mapping[str, Any]) -> RecordData:
    """A record type (a TypedDict) is a dict at run time, and only a dict is encoded as a JSON object."""
    assert isinstance(data, dict), type(data)
    return data
