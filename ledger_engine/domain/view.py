"""What a rule may see of the ledger: a read-only view of current records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Protocol


@dataclass(frozen=True, slots=True)
class Record:
    """A logical record with the revision the ledger gave it."""

    revision: int
    data: dict[str, Any]


class StateView(Protocol):
    def get(self, family: str, key: str) -> Record | None:
        """The current record, including changes earlier in the same command."""

    def scan(self, family: str, prefix: str) -> Iterator[tuple[str, Record]]:
        """Records whose key starts with ``prefix``, in key byte order."""
