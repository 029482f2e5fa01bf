"""The head: the sequence and entry hash of the last command a store holds, kept at ``meta/head``."""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from ledger_engine.canonical import ZERO_HASH
from ledger_engine.errors import ErrorCode, LedgerError, StorageFault
from ledger_engine.layout import META
from ledger_engine.open_json import Document
from ledger_engine.storage.readable import ReadableStore

HEAD_KEY = b"head"


@dataclass(frozen=True, slots=True)
class Head:
    sequence: int
    entry_hash: str

    def as_json(self) -> Document:
        return {"sequence": self.sequence, "entry_hash": self.entry_hash}


GENESIS_HEAD = Head(0, ZERO_HASH)


def read_head(store: ReadableStore) -> Head:
    """The head ``store`` holds: NOT_FOUND before its genesis, STORAGE_CORRUPT if what it holds is no head."""
    raw = store.get(META, HEAD_KEY)
    if raw is None:
        where = getattr(store, "path", None)
        raise LedgerError(ErrorCode.NOT_FOUND, "no initialised ledger" + (f" at {where}" if where else ""))
    try:
        value = orjson.loads(raw)
        return Head(value["sequence"], value["entry_hash"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise StorageFault(ErrorCode.STORAGE_CORRUPT, f"{META}/{HEAD_KEY.decode()} is not a head") from None
