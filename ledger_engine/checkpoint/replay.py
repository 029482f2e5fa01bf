"""Replay: rebuild a ledger from a verified export's genesis and journal, checking every hash.

Replay applies each journalled envelope through the same admission and rules as
live commands and compares the entry hash it produces with the recorded one,
which covers the outcome, the result and the delta hash. It dispatches nothing:
the rebuilt ledger starts with dispatch disabled.
"""

from __future__ import annotations

import os
from collections import deque
from itertools import zip_longest
from pathlib import Path
from typing import Any

import orjson

from ledger_engine.application.journal_tree import stored_root
from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.digest import logical_state_hash
from ledger_engine.checkpoint.export import EVENTS_FILE, GENESIS_FILE, JOURNAL_FILE, event_lines
from ledger_engine.checkpoint.load import load_checkpoint
from ledger_engine.checkpoint.verify import VerificationError, verify_export

WINDOW = 512


def replay_export(export_dir: str | os.PathLike, data_dir: str | os.PathLike, *,
                  checkpoint_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Rebuild ``export_dir``'s ledger from its genesis, or from an earlier verified checkpoint of it."""
    root = Path(export_dir)
    metadata = verify_export(root)
    genesis = orjson.loads((root / GENESIS_FILE).read_bytes())
    start = 0
    if checkpoint_dir is not None:
        start = _load_earlier_checkpoint(checkpoint_dir, data_dir, metadata, root)
    with LedgerOwner.open(data_dir, genesis=genesis, max_group=WINDOW) as owner:
        if owner.head().sequence != start:
            raise VerificationError(str(data_dir), "replay needs an empty data directory")
        owner.set_dispatch(False, "rebuilt by replay; reconcile before dispatching")
        _apply_journal(owner, root / JOURNAL_FILE, after=start)
        owner.at_boundary(lambda store: _compare_events(store, root / EVENTS_FILE))
        state_hash = owner.at_boundary(logical_state_hash)
        head = owner.head()
        journal_root = owner.at_boundary(lambda store: stored_root(store, head.sequence))
    if state_hash != metadata["logical_state_hash"]:
        raise VerificationError("state", "replayed logical state hash differs from the export")
    if journal_root != metadata["journal_tree"]["root"]:
        raise VerificationError("journal_tree", "the replayed ledger's journal tree root differs from the export's")
    return {"sequence": head.sequence, "entry_hash": head.entry_hash, "logical_state_hash": state_hash,
            "journal_tree": {"size": head.sequence, "root": journal_root}}


def _load_earlier_checkpoint(checkpoint_dir: str | os.PathLike, data_dir: str | os.PathLike,
                             metadata: dict[str, Any], root: Path) -> int:
    """Load a checkpoint whose head lies on ``root``'s journal; returns its sequence."""
    checkpoint = verify_export(checkpoint_dir)
    if checkpoint["genesis_hash"] != metadata["genesis_hash"] or checkpoint["sequence"] > metadata["sequence"]:
        raise VerificationError(str(checkpoint_dir), "checkpoint is not an earlier state of this ledger")
    if checkpoint["sequence"] and _entry_hash_at(root / JOURNAL_FILE, checkpoint["sequence"]) != checkpoint["last_entry_hash"]:
        raise VerificationError(str(checkpoint_dir), "checkpoint head is not on this journal")
    return load_checkpoint(checkpoint_dir, data_dir).sequence


def _entry_hash_at(journal_path: Path, sequence: int) -> str | None:
    with open(journal_path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if number == sequence:
                return orjson.loads(line)["entry_hash"]
    return None


def _apply_journal(owner: LedgerOwner, journal_path: Path, *, after: int) -> None:
    in_flight: deque = deque()
    with open(journal_path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if number <= after:
                continue
            entry = orjson.loads(line)
            in_flight.append((number, entry["entry_hash"], owner.submit_async(entry["envelope"])))
            if len(in_flight) >= WINDOW:
                _check(*in_flight.popleft())
    while in_flight:
        _check(*in_flight.popleft())


def _compare_events(store, events_path: Path) -> None:
    """The events the replay produced must be exactly the exported ones."""
    with open(events_path, "rb") as handle:
        exported = (line.rstrip(b"\n") for line in handle)
        for number, (replayed, line) in enumerate(zip_longest(event_lines(store), exported), start=1):
            if replayed != line:
                raise VerificationError(f"{EVENTS_FILE}:{number}", "differs from the replayed events")


def _check(number: int, expected_hash: str, future) -> None:
    try:
        outcome = future.result()
    except Exception as error:
        raise VerificationError(f"{JOURNAL_FILE}:{number}", f"envelope no longer applies: {error}") from None
    if outcome.duplicate or outcome.entry_hash != expected_hash:
        raise VerificationError(f"{JOURNAL_FILE}:{number}",
                                f"replayed entry differs ({outcome.outcome} {outcome.code})")
