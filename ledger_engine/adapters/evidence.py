"""Evidence bytes by SHA-256 digest: stored durably before any envelope names them."""

from __future__ import annotations

import os
from pathlib import Path

from ledger_engine.adapters.files import create_durably, read_regular_file, replace_durably
from ledger_engine.canonical import sha256_hex
from ledger_engine.errors import ErrorCode, LedgerError


class EvidenceStore:
    """Content-addressed: the same bytes always land at the same name.

    A file under a digest's name whose bytes are not that digest's (emptied or
    altered on disk) is not the evidence: it is not ``in`` the store, and
    storing the right bytes again puts them in its place.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path_of(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put(self, data: bytes) -> str:
        digest = sha256_hex(data)
        path = self.path_of(digest)
        if not create_durably(path, data) and not self._holds(path, data):
            replace_durably(path, data)
        return digest

    def get(self, digest: str) -> bytes:
        """The bytes stored under ``digest``, checked against it."""
        try:
            data = read_regular_file(self.path_of(digest))
        except FileNotFoundError:
            raise LedgerError(ErrorCode.NOT_FOUND, f"no evidence {digest}") from None
        except OSError as error:  # a link, a directory, a pipe: nothing to verify
            raise LedgerError(ErrorCode.VERIFICATION_FAILED, f"evidence {digest} is unreadable: {error}") from None
        if sha256_hex(data) != digest:
            raise LedgerError(ErrorCode.VERIFICATION_FAILED, f"evidence {digest} does not match its digest")
        return data

    def __contains__(self, digest: str) -> bool:
        """Whether the bytes of ``digest`` are stored intact."""
        try:
            return sha256_hex(read_regular_file(self.path_of(digest))) == digest
        except OSError:
            return False

    @staticmethod
    def _holds(path: Path, data: bytes) -> bool:
        """Whether the regular file at ``path`` holds exactly ``data`` (compared, not hashed again)."""
        try:
            return read_regular_file(path) == data
        except OSError:
            return False
