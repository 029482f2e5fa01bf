"""Writes of the commands in the current commit group, read through over the store.

Commands in a group execute one at a time; each sees what the earlier ones
wrote. Nothing is visible to anyone else until the group's synchronous batch
returns.
"""

from __future__ import annotations

from typing import Iterator

from ledger_engine.storage.value_codec import decode_record
from ledger_engine.ordered import overlay_scan
from ledger_engine.domain.view import Record
from ledger_engine.storage.rocks import RocksStore, WriteOp


class PendingBatch:
    def __init__(self, store: RocksStore) -> None:
        self.store = store
        self._ops: dict[tuple[str, bytes], bytes | None] = {}
        # The same writes by family, so a scan filters only its own family's writes, not the whole group's.
        self._by_family: dict[str, dict[bytes, bytes | None]] = {}
        # Nobody else writes the store, so what it returned stays true for the whole group.
        self._reads: dict[tuple[str, bytes], bytes | None] = {}
        # Records decoded once for the whole group, for readers that never change what they get.
        self._shared: dict[tuple[str, bytes], Record | None] = {}
        # Revisions of the records decoded so far, so staging a write needs no second decode.
        self._revisions: dict[tuple[str, bytes], int] = {}

    def get_raw(self, family: str, key: bytes) -> bytes | None:
        address = (family, key)
        if address in self._ops:
            return self._ops[address]
        if address not in self._reads:
            self._reads[address] = self.store.get(family, key)
        return self._reads[address]

    def put(self, family: str, key: bytes, value: bytes | None) -> None:
        self._ops[(family, key)] = value
        self._shared.pop((family, key), None)
        self._revisions.pop((family, key), None)
        written = self._by_family.get(family)
        if written is None:
            written = self._by_family[family] = {}
        written[key] = value

    def scan_raw(self, family: str, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        written = self._by_family.get(family, {})
        pending = {key: value for key, value in written.items() if key.startswith(prefix)}
        if not pending:
            return self.store.scan(family, prefix)
        return overlay_scan(self.store.scan(family, prefix), pending)

    def ops(self) -> list[WriteOp]:
        return [(family, key, value) for (family, key), value in self._ops.items()]

    def __len__(self) -> int:
        return len(self._ops)

    # StateView for the rules.
    def get(self, family: str, key: str) -> Record | None:
        address = (family, key.encode())
        raw = self.get_raw(*address)
        if raw is None:
            return None
        record = decode_record(raw)
        self._revisions[address] = record.revision
        return record

    def revision(self, family: str, key: str) -> int:
        """The current record's revision, 0 if there is none."""
        address = (family, key.encode())
        known = self._revisions.get(address)
        if known is not None:
            return known
        raw = self.get_raw(*address)
        return decode_record(raw).revision if raw is not None else 0

    def shared(self, family: str, key: str) -> Record | None:
        """``get``, decoded once per group: the caller must not change the record or its data."""
        address = (family, key.encode())
        if address in self._shared:
            return self._shared[address]
        raw = self.get_raw(*address)
        record = self._shared[address] = decode_record(raw) if raw is not None else None
        return record

    def scan(self, family: str, prefix: str) -> Iterator[tuple[str, Record]]:
        for key, raw in self.scan_raw(family, prefix.encode()):
            yield key.decode(), decode_record(raw)
