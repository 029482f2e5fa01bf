"""Replay: rebuild a ledger from a verified export's genesis and journal, checking every hash.

Replay applies each journalled envelope through the same admission and rules as
live commands and compares the entry hash it produces with the recorded one,
which covers the outcome, the result and the delta hash. It dispatches nothing:
the rebuilt ledger starts with dispatch disabled.
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import Any

import orjson

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.checkpoint.digest import logical_state_hash
from ledger_engine.checkpoint.export import GENESIS_FILE, JOURNAL_FILE
from ledger_engine.checkpoint.verify import VerificationError, verify_export

WINDOW = 512


def replay_export(export_dir: str | os.PathLike, data_dir: str | os.PathLike) -> dict[str, Any]:
    root = Path(export_dir)
    metadata = verify_export(root)
    genesis = orjson.loads((root / GENESIS_FILE).read_bytes())
    with LedgerOwner.open(data_dir, genesis=genesis, max_group=WINDOW) as owner:
        if owner.head().sequence != 0:
            raise VerificationError(str(data_dir), "replay needs an empty data directory")
        owner.set_dispatch(False, "rebuilt by replay; reconcile before dispatching")
        _apply_journal(owner, root / JOURNAL_FILE)
        state_hash = owner.at_boundary(logical_state_hash)
        head = owner.head()
    if state_hash != metadata["logical_state_hash"]:
        raise VerificationError("state", "replayed logical state hash differs from the export")
    return {"sequence": head.sequence, "entry_hash": head.entry_hash, "logical_state_hash": state_hash}


def _apply_journal(owner: LedgerOwner, journal_path: Path) -> None:
    in_flight: deque = deque()
    with open(journal_path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            entry = orjson.loads(line)
            in_flight.append((number, entry["entry_hash"], owner.submit_async(entry["envelope"])))
            if len(in_flight) >= WINDOW:
                _check(*in_flight.popleft())
    while in_flight:
        _check(*in_flight.popleft())


def _check(number: int, expected_hash: str, future) -> None:
    try:
        outcome = future.result()
    except Exception as error:
        raise VerificationError(f"{JOURNAL_FILE}:{number}", f"envelope no longer applies: {error}") from None
    if outcome.duplicate or outcome.entry_hash != expected_hash:
        raise VerificationError(f"{JOURNAL_FILE}:{number}",
                                f"replayed entry differs ({outcome.outcome} {outcome.code})")
