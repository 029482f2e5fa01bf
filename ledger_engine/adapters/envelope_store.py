"""Envelopes by command ID: the first one stored for an ID is the one every retry submits."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from pydantic import ValidationError

from ledger_engine.adapters.files import create_durably, read_regular_file, replace_durably
from ledger_engine.canonical import canonical_bytes
from ledger_engine.envelope import CommandEnvelope
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.keys import component
from ledger_engine.open_json import Unvalidated


class EnvelopeStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, command_id: str) -> Path:
        return self.root / f"{component(command_id)}.json"

    def load(self, command_id: str) -> Unvalidated | None:
        """The envelope stored for ``command_id``, if any; ``COMMAND_ID_CONFLICT`` for a file that is not one.

        The store is a tree of files that a recovery restores from a backup, so what a file holds is
        checked: a closed envelope of this very command ID, never something read as one.
        """
        path = self._path(command_id)
        if not os.path.lexists(path):
            return None
        stored: Unvalidated | None
        try:  # a regular file only: a directory, a link or an unreadable file is no envelope
            stored = orjson.loads(read_regular_file(path))
            CommandEnvelope.model_validate(stored)
        except (OSError, orjson.JSONDecodeError, ValidationError):
            stored = None
        if stored is None or stored["command_id"] != command_id:
            raise LedgerError(ErrorCode.COMMAND_ID_CONFLICT,
                              f"what is stored for command {command_id} is not an envelope of that command")
        return stored

    def store(self, envelope: Unvalidated, *, canonical: bytes | None = None) -> Unvalidated:
        """Store ``envelope`` unless its command ID already has one; returns the stored envelope.

        ``canonical``, when given, is the envelope's canonical bytes as admission computed them.
        """
        if create_durably(self._path(envelope["command_id"]), canonical or canonical_bytes(envelope)):
            return envelope
        stored = self.load(envelope["command_id"])
        assert stored is not None, "an envelope, once stored, stays"
        return stored

    def replace(self, envelope: Unvalidated, *, canonical: bytes | None = None) -> None:
        """Re-admission only (docs/adr/0012): the ledger holds no outcome for this command ID."""
        replace_durably(self._path(envelope["command_id"]), canonical or canonical_bytes(envelope))

