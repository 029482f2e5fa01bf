"""What a rule may see of the ledger: a read-only view of current records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Protocol, TypeVar, cast

from ledger_engine.open_json import RecordData

# A record type of ledger_engine/domain/schema: a TypedDict, read and written as a JSON object.
Shape = TypeVar("Shape", bound=Mapping[str, Any])


@dataclass(frozen=True, slots=True)
class Record:
    """A logical record with the revision the ledger gave it."""

    revision: int
    data: RecordData

    def data_as(self, shape: type[Shape]) -> Shape:
        """The data as the record type ``shape`` (``shaped``)."""
        return shaped(self.data, shape)


def shaped(data: RecordData, shape: type[Shape]) -> Shape:
    """``data`` as the record type its key stores: the ledger wrote it in that shape, so nothing is checked."""
    return cast(Shape, data)


def with_fields(record: Shape, **fields: Any) -> Shape:
    """A copy of ``record`` with ``fields`` set: fields of its own record type, which nothing here checks."""
    return cast(Shape, {**record, **fields})


class StateView(Protocol):
    def get(self, family: str, key: str) -> Record | None:
        """The current record, including changes earlier in the same command."""

    def scan(self, family: str, prefix: str) -> Iterator[tuple[str, Record]]:
        """Records whose key starts with ``prefix``, in key byte order."""
