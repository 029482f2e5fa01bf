"""Rows: a key and its stored value in one column family, and their canonical encoding.

A journal entry's delta (``application/journal.py``) and the logical state digest (``storage/digest.py``) both hash
a list of ``{"column_family", "key", "value"}`` rows in JCS, streamed piece by piece.
"""

from __future__ import annotations

import hashlib
from typing import Iterable

from ledger_engine.canonical import canonical_string
from ledger_engine.layout import ALL_FAMILIES

# (family, key, canonical value bytes or None for a deletion)
DeltaRow = tuple[str, str, bytes | None]


def canonical_rows(rows: Iterable[DeltaRow]) -> Iterable[bytes]:
    """JCS of ``[{"column_family", "key", "value"}, ...]`` in pieces, reusing each value's canonical bytes.

    docs/spec/engine-and-journal.md §9 names the digest rows ``{column_family, key, value}``; deltas use the
    same shape (docs/adr/0011). The keys column_family < key < value are in JCS
    order, so the concatenation is byte-equal to encoding the whole array at once.
    """
    yield b"["
    separator = b""
    for family, key, value in rows:
        yield separator
        yield row_bytes(family, key, value)
        separator = b","
    yield b"]"


def row_bytes(family: str, key: str, value: bytes | None) -> bytes:
    """JCS of one ``{"column_family", "key", "value"}`` row, given the value's canonical bytes."""
    opening = _ROW_OPENINGS.get(family)
    if opening is None:
        opening = b'{"column_family":' + canonical_string(family) + b',"key":'
    return opening + canonical_string(key) + b',"value":' + (value if value is not None else b"null") + b"}"


# Every row of a family starts with the same bytes.
_ROW_OPENINGS = {family: b'{"column_family":' + canonical_string(family) + b',"key":' for family in ALL_FAMILIES}


def rows_hash(domain: str, rows: Iterable[DeltaRow]) -> tuple[str, int]:
    """Hash of the domain prefix and JCS of ``rows``, streamed; also returns the byte length."""
    digest = hashlib.sha256(domain.encode())
    size = 0
    for piece in canonical_rows(rows):
        digest.update(piece)
        size += len(piece)
    return digest.hexdigest(), size
