"""Query projections kept in the ``indexes`` column family.

A projection maps one logical record, or one event, to index entries. The
executor maintains them in the same batch as the command; ``rebuild`` derives
them again from the logical state and the events alone, so the two always
agree byte for byte. Indexes are never authority for a money check.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Protocol

from ledger_engine.open_json import IndexValue, JournalEvent, JsonObject, RecordData

IndexEntry = tuple[str, IndexValue]
IndexReader = Callable[[str], IndexValue | None]
# In ``record_kinds``: every record of the family, whatever its key.
ANY_KIND = "*"


def picked(record: Mapping[str, Any], fields: tuple[str, ...]) -> JsonObject:
    """The named fields of ``record``, each of which it has."""
    return {field: record[field] for field in fields}


class Projection(Protocol):
    @property
    def record_kinds(self) -> frozenset[tuple[str, str]]:
        """The records it indexes, as (family, first key component): the commit path asks it about no others."""

    @property
    def event_types(self) -> frozenset[str] | None:
        """The event types it indexes (None: every event); the commit path asks it about no others."""

    def record_entries(self, family: str, key: str, data: RecordData) -> Iterable[IndexEntry]:
        """Entries for one current record; a pure function of its key and data."""

    def event_entries(self, sequence: int, index: int, event: JournalEvent, read: IndexReader) -> Iterable[IndexEntry]:
        """Entries for one event, seen in sequence order; ``read`` sees earlier entries."""


def all_projections() -> list[Projection]:
    from ledger_engine.projections.catalogue import CatalogueProjection
    from ledger_engine.projections.ledger import LedgerProjection
    from ledger_engine.projections.money import MoneyProjection
    from ledger_engine.projections.payouts import PayoutsProjection
    from ledger_engine.projections.streaming import StreamingProjection

    return [LedgerProjection(), CatalogueProjection(), StreamingProjection(), MoneyProjection(), PayoutsProjection()]
