"""The read-only view selectors take: the ledger as of one command boundary, and nothing that writes.

A selector (``payout_queries``, ``overview_queries``) takes a ``LedgerView``
and returns typed records; it never sees the store, and the console never
sees a key. ``LedgerOwner.view()`` makes one inside ``at_boundary``, so the
data and the sequence it names belong together (docs/adr/0046).
"""

from __future__ import annotations

from typing import Iterator, overload

import orjson

from ledger_engine.domain.schema.money_payouts import Effect
from ledger_engine.domain.view import Record, Shape
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.layout import INDEXES, OUTBOX, STATE
from ledger_engine.open_json import IndexValue, RecordData
from ledger_engine.storage.head import read_head
from ledger_engine.storage.readable import ReadableStore
from ledger_engine.storage.value_codec import decode_record


class LedgerView:
    """Point reads and prefix scans of state, the outbox and the indexes, at the sequence it was opened at."""

    __slots__ = ("_store", "head", "sequence")

    def __init__(self, store: ReadableStore) -> None:
        self._store = store
        self.head = read_head(store)  # what the reads belong to, when the view is read between two commands
        self.sequence = self.head.sequence

    def get(self, family: str, key: bytes) -> bytes | None:
        """A raw value, for the selectors that read the journal, deltas and events (accounting, journal_queries)."""
        return self._store.get(family, key)

    def scan(self, family: str, prefix: bytes = b"", start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        return self._store.scan(family, prefix, start)

    def record(self, key: str) -> Record | None:
        raw = self._store.get(STATE, key.encode())
        return decode_record(raw) if raw is not None else None

    @overload
    def require(self, key: str, what: str) -> RecordData: ...

    @overload
    def require(self, key: str, what: str, shape: type[Shape]) -> Shape: ...

    def require(self, key: str, what: str, shape: type[Shape] | None = None) -> RecordData | Shape:
        """A state record's data, as the record type ``shape`` its key stores where given; NOT_FOUND naming ``what``
        when there is none."""
        record = self.require_record(key, what)
        return record.data if shape is None else record.data_as(shape)

    def require_record(self, key: str, what: str) -> Record:
        """A state record, or NOT_FOUND naming ``what``."""
        record = self.record(key)
        if record is None:
            raise LedgerError(ErrorCode.NOT_FOUND, f"{what} does not exist")
        return record

    def records(self, prefix: str, *, after: str | None = None) -> Iterator[tuple[str, Record]]:
        """State records under ``prefix`` in key order, those after the key ``after`` where given."""
        start = (after + "\x00").encode() if after is not None else None
        for raw_key, raw in self._store.scan(STATE, prefix.encode(), start):
            yield raw_key.decode(), decode_record(raw)

    def effect(self, effect_id: str) -> Effect:
        found = self.effect_record(effect_id)
        if found is None:
            raise LedgerError(ErrorCode.NOT_FOUND, f"effect {effect_id} does not exist")
        return found.data_as(Effect)

    def effect_record(self, effect_id: str) -> Record | None:
        raw = self._store.get(OUTBOX, effect_id.encode())
        return decode_record(raw) if raw is not None else None

    def entry(self, key: str) -> IndexValue | None:
        """An index entry: the JSON object a projection wrote, of no record type."""
        raw = self._store.get(INDEXES, key.encode())
        return orjson.loads(raw) if raw is not None else None

    def entries(self, prefix: str, limit: int | None = None) -> Iterator[tuple[list[str], IndexValue]]:
        """Index entries under ``prefix`` in key order, each with the key's components after the prefix."""
        for number, (raw_key, raw) in enumerate(self._store.scan(INDEXES, prefix.encode())):
            if limit is not None and number >= limit:
                return
            yield raw_key.decode()[len(prefix):].split("/"), orjson.loads(raw)

    def count(self, prefix: str) -> int:
        return sum(1 for _ in self._store.scan(INDEXES, prefix.encode()))

    def as_rules_read(self) -> "RuleReads":
        """This view as the rules read the ledger (``domain.view.StateView``), for a selector that asks a rule
        what it would decide now."""
        return RuleReads(self._store)


class RuleReads:
    """Records of any family as the rules read them (``domain.view.StateView``), read-only."""

    __slots__ = ("_store",)

    def __init__(self, store: ReadableStore) -> None:
        self._store = store

    def get(self, family: str, key: str) -> Record | None:
        raw = self._store.get(family, key.encode())
        return decode_record(raw) if raw is not None else None

    def scan(self, family: str, prefix: str) -> Iterator[tuple[str, Record]]:
        for raw_key, raw in self._store.scan(family, prefix.encode()):
            yield raw_key.decode(), decode_record(raw)
