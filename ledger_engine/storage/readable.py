"""What a reader needs of a store: point reads and prefix scans of a column family, nothing that writes."""

from __future__ import annotations

from typing import Iterator, Protocol


class ReadableStore(Protocol):
    def get(self, family: str, key: bytes) -> bytes | None: ...

    def scan(self, family: str, prefix: bytes = b"", start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]: ...
