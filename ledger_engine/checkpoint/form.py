"""An export's form: each file as its metadata hashes it, each line canonical JSON.

Whether a line is canonical needs nothing but the line, and checking it is a
quarter of verifying an export, so ``FormCheck`` checks the form in a second
process, on another core, while ``verify_export`` checks what the lines say
(docs/adr/0086). The verdict is the same either way. When both find
something, the form is named: what a damaged file says proves nothing.

This module imports nothing of the engine but its encodings, so the second
process starts in tens of milliseconds.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import time
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Final, Iterator

import orjson

from ledger_engine.adapters.files import open_regular_file
from ledger_engine.canonical import canonical_bytes
from ledger_engine.errors import ErrorCode, LedgerError
from ledger_engine.open_json import Document

ROWS_FILE = "state_rows.jsonl"
JOURNAL_FILE = "journal.jsonl"
DELTAS_FILE = "deltas.jsonl"
EVENTS_FILE = "events.jsonl"
GENESIS_FILE = "genesis.json"
METADATA_FILE = "metadata.json"
REQUIRED_FILES = (ROWS_FILE, JOURNAL_FILE, DELTAS_FILE, EVENTS_FILE, GENESIS_FILE)
LINE_FILES = (JOURNAL_FILE, DELTAS_FILE, ROWS_FILE, EVENTS_FILE)

# Below this many bytes of lines a second process costs more than it saves, and the caller checks the form.
PARALLEL_FROM_BYTES = 4 << 20
# The metadata's list of files goes to the child as an argument; an export's own is about a kilobyte.
MAX_FILES_ARGUMENT = 16 << 10
# The child checks less than its caller does, so one that has not answered within as long again as the caller's
# own check took, and this, is stuck: it is killed and the form is checked in the caller.
CHILD_GRACE_S = 10.0

log = logging.getLogger(__name__)


class VerificationError(LedgerError):
    """A history or a copy of one that does not verify, naming its first bad item; ``CONFLICTING_EVIDENCE`` when
    what an entry states is not what its inputs make (a frozen chunk that is not the split of its listener-days)."""

    def __init__(self, item: str, reason: str, code: ErrorCode = ErrorCode.VERIFICATION_FAILED) -> None:
        super().__init__(code, f"{item}: {reason}")
        self.item = item
        self.reason = reason


def file_digest(path: Path) -> tuple[str, int]:
    """SHA-256 and size of the regular file at ``path`` (``OSError`` for anything else)."""
    digest = hashlib.sha256()
    size = 0
    with open_regular_file(path) as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def verify_file_hashes(root: Path, metadata: Document) -> None:
    for name in REQUIRED_FILES:
        expected = metadata["files"].get(name) if isinstance(metadata["files"], dict) else None
        if not isinstance(expected, dict):
            raise VerificationError(METADATA_FILE, f"does not list {name}")
        path = root / name
        if not os.path.lexists(path):
            raise VerificationError(name, "missing")
        try:
            digest, size = file_digest(path)
        except OSError as error:
            raise VerificationError(name, f"not a readable regular file: {error.strerror}") from None
        _require_hashed_as(expected, name, digest, size)


def parsed_lines(path: Path, name: str, *, hashed_as: Any = None) -> Iterator[tuple[str, bytes, Any]]:
    """Each line of ``path`` as its item name, its bytes and its value; its form is ``check_form``'s.

    Only a regular file is read (``OSError`` for anything else): these are read beside the form check,
    not after it, so a pipe planted in the export must not stall them. With ``hashed_as`` (the file's
    entry in the metadata), the bytes read must hash to it once the file is read to its end: what another
    process checked is then what was read here, even if the file changed in between.
    """
    digest, size = hashlib.sha256(), 0
    with open_regular_file(path) as handle:
        for number, line in enumerate(handle, start=1):
            if hashed_as is not None:
                digest.update(line)
                size += len(line)
            item, raw = f"{name}:{number}", line.rstrip(b"\n")
            try:
                yield item, raw, orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise VerificationError(item, "not valid JSON") from None
    if hashed_as is not None:
        _require_hashed_as(hashed_as, name, digest.hexdigest(), size)


def _require_hashed_as(entry: Any, name: str, digest: str, size: int) -> None:
    """The file ``name`` read as ``digest`` and ``size`` must be what its metadata ``entry`` says."""
    if not isinstance(entry, dict) or (entry.get("sha256"), entry.get("bytes")) != (digest, size):
        raise VerificationError(name, "file hash does not match metadata")


def check_form(root: Path, metadata: Document) -> None:
    """Raise ``VerificationError`` for the first file unlike its hash in ``metadata``, else for the first line
    that is not canonical JSON."""
    verify_file_hashes(root, metadata)
    for name in LINE_FILES:
        for _ in _canonical_lines(root / name, name):
            pass


def _canonical_lines(path: Path, name: str) -> Iterator[tuple[str, bytes, Any]]:
    """``parsed_lines``, each shown canonical JSON first (a float, an unsafe integer and too deep are not:
    no stored value is)."""
    for item, raw, value in parsed_lines(path, name):
        try:
            canonical = canonical_bytes(value)
        except LedgerError as refused:
            raise VerificationError(item, f"not canonical JSON: {refused.detail}") from None
        if canonical != raw:
            raise VerificationError(item, "not canonical JSON")
        yield item, raw, value


Lines = Callable[[str], Iterator[tuple[str, bytes, Any]]]


class FormCheck:
    """``check_form`` of the export at ``root``, beside the caller's check of its content.

    The caller reads the export's lines through ``lines`` and calls ``require`` once its own check is
    done, or has failed: ``require`` raises the form's first fault, if it has one. A large export's form is
    checked by a child process meanwhile. A small one's is checked here, each line as the caller reads it,
    and whatever the caller did not read to its end (its check failed first) by ``require``. If the child
    cannot start or does not answer, the form is checked here too: slower, never skipped.
    """

    def __init__(self, root: Path, metadata: Document) -> None:
        self._root, self._metadata, self._started = root, metadata, time.monotonic()
        self._child = _start_child(root, metadata) if _line_bytes(metadata) >= PARALLEL_FROM_BYTES else None
        self.in_child = self._child is not None
        self._read_whole: set[str] = set()
        if not self.in_child:
            verify_file_hashes(root, metadata)

    def __enter__(self) -> "FormCheck":
        return self

    def __exit__(self, *_: object) -> None:
        if self._child is not None:
            _stop(self._child)
            self._child = None

    def lines(self, name: str) -> Iterator[tuple[str, bytes, Any]]:
        """The lines of the export's file ``name`` (``parsed_lines``)."""
        if self.in_child:
            return parsed_lines(self._root / name, name, hashed_as=_entry(self._metadata, name))
        return self._checked_here(name)

    def _checked_here(self, name: str) -> Iterator[tuple[str, bytes, Any]]:
        yield from _canonical_lines(self._root / name, name)
        self._read_whole.add(name)

    def require(self) -> None:
        if not self.in_child:
            if self._read_whole != set(LINE_FILES):
                check_form(self._root, self._metadata)
            return
        grace = time.monotonic() - self._started + CHILD_GRACE_S
        found = _verdict(self._child, grace) if self._child is not None else _NO_VERDICT
        self._child = None
        if found is _NO_VERDICT:
            log.warning("the form check of %s did not answer; checking it in this process", self._root)
            check_form(self._root, self._metadata)
        elif found is not None:
            raise VerificationError(found["item"], found["reason"])


class _Silence(Enum):
    NO_VERDICT = "no verdict"


_NO_VERDICT: Final = _Silence.NO_VERDICT


def _entry(metadata: Document, name: str) -> Any:
    files = metadata.get("files")
    return files.get(name) if isinstance(files, dict) else None


def _line_bytes(metadata: Document) -> int:
    entries = [_entry(metadata, name) for name in LINE_FILES]
    return sum(entry["bytes"] for entry in entries if isinstance(entry, dict) and type(entry.get("bytes")) is int)


def _child_command() -> list[str]:
    # -P: nothing is imported from the working directory, which may be the export, holding what it likes.
    return [sys.executable, "-P", "-m", __name__]


def _start_child(root: Path, metadata: Document) -> subprocess.Popen[bytes] | None:
    try:
        files = orjson.dumps(metadata["files"]).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None
    if len(files) > MAX_FILES_ARGUMENT:
        return None
    try:
        return subprocess.Popen([*_child_command(), str(root), files], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None


def _verdict(child: subprocess.Popen[bytes], timeout_s: float) -> dict[str, str] | None | _Silence:
    """None when the child found the form sound, its finding, or ``_NO_VERDICT`` when it gave none in time."""
    try:
        output, _ = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop(child)
        return _NO_VERDICT
    if child.returncode != 0:
        return _NO_VERDICT
    try:
        found = orjson.loads(output)
    except orjson.JSONDecodeError:
        return _NO_VERDICT
    if found is None:
        return None
    if isinstance(found, dict) and all(isinstance(found.get(key), str) for key in ("item", "reason")):
        return found
    return _NO_VERDICT


def _stop(child: subprocess.Popen[bytes]) -> None:
    child.kill()
    try:
        child.communicate()  # reaps it and closes its pipe
    except (OSError, ValueError):  # an earlier communicate was interrupted half way
        child.wait()


def main() -> None:
    """The child: the export's directory and its metadata's ``files`` as its arguments."""
    root, files = Path(sys.argv[1]), orjson.loads(sys.argv[2])
    try:
        check_form(root, {"files": files})
        found = None
    except VerificationError as error:
        found = {"item": error.item, "reason": error.reason}
    sys.stdout.buffer.write(orjson.dumps(found))


if __name__ == "__main__":
    main()
