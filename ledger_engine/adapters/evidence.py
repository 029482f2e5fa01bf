"""Evidence bytes by SHA-256 digest: stored durably before any envelope names them."""

from __future__ import annotations

import os
from pathlib import Path

from ledger_engine.adapters.files import create_durably
from ledger_engine.canonical import sha256_hex
from ledger_engine.errors import ErrorCode, LedgerError


class EvidenceStore:
    """Content-addressed and write-once: the same bytes always land at the same name."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def path_of(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        create_durably(self.path_of(digest), data)
        return digest

    def get(self, digest: str) -> bytes:
        """The bytes stored under ``digest``, checked against it."""
        path = self.path_of(digest)
        if not path.exists():
            raise LedgerError(ErrorCode.NOT_FOUND, f"no evidence {digest}")
        data = path.read_bytes()
        if sha256_hex(data) != digest:
            raise LedgerError(ErrorCode.VERIFICATION_FAILED, f"evidence {digest} does not match its digest")
        return data

    def __contains__(self, digest: str) -> bool:
        return self.path_of(digest).exists()
