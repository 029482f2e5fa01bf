"""The SIMULATED chain's durable state: a log of what it committed, and a small document of its controls.

A real node keeps what its chain committed and forgets its mempool when it
restarts. So does this one:

- ``<state>.log``: one canonical JSON line per committed change, appended and
  fsynced before the call that made it answers: ``{"fund": ...}`` for a mint,
  ``{"commit": ...}`` for a transaction the chain executed (its signed bytes,
  version, block time, status). Accounts, sequence numbers and balances are
  what replaying it gives. A last line cut short by a kill was never
  answered, so it is dropped when the log is read again.
- ``<state>``: the test controls (clock offset, queued faults, the hold and
  the held transactions), replaced atomically whenever one changes; and,
  only for a chain started with ``keep_mempool``, the mempool.

Transactions are kept as their signed bytes and decoded again on load, so
what the chain resumes with is exactly what it accepted. Amounts and clock
offsets are integers (micro-units, microseconds).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import orjson

from ledger_engine.adapters.files import SharedSync
from ledger_engine.open_json import JsonObject
from porto_console.effects.transactions import SignedTransfer, Terms, decode_transfer

FORMAT = "porto-simulated-chain-state/v2"


@dataclass
class Controls:
    """What tests set on the chain; nothing a real node has."""

    offset_us: int = 0
    faults: list[JsonObject] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    transfers_before_hold: int | None = None
    mempool: dict[str, dict[str, str]] = field(default_factory=dict)  # sender -> sequence -> signed bytes (hex)


def log_path(state_path: Path) -> Path:
    return state_path.with_name(state_path.name + ".log")


def read_controls(state_path: Path, chain_id: int) -> Controls | None:
    if not state_path.exists():
        return None
    state = orjson.loads(state_path.read_bytes())
    if state.get("format") != FORMAT or state.get("chain") != "SIMULATED":
        raise ValueError(f"{state_path} is not a SIMULATED chain state file of format {FORMAT}")
    if state["chain_id"] != chain_id:
        raise ValueError(f"{state_path} is for chain id {state['chain_id']}, not {chain_id}")
    return Controls(state["offset_us"], state["faults"], state["held"], state["transfers_before_hold"],
                    state["mempool"])


def write_controls(state_path: Path, chain_id: int, controls: Controls) -> None:
    document = {"format": FORMAT, "chain": "SIMULATED", "chain_id": chain_id, "offset_us": controls.offset_us,
                "faults": controls.faults, "held": sorted(controls.held),
                "transfers_before_hold": controls.transfers_before_hold, "mempool": controls.mempool}
    replace(state_path, orjson.dumps(document, option=orjson.OPT_SORT_KEYS))


@dataclass(frozen=True, slots=True)
class Funded:
    asset: str
    address: str
    amount: int


@dataclass(frozen=True, slots=True)
class CommitRecord:
    transfer: SignedTransfer[Terms]
    version: int
    timestamp_us: int
    success: bool
    vm_status: str


def fund_line(asset: str, address: str, amount: int) -> bytes:
    return orjson.dumps({"fund": {"asset": asset, "address": address, "amount": str(amount)}}) + b"\n"


def commit_line(record: CommitRecord) -> bytes:
    return orjson.dumps({"commit": {
        "signed_bytes": record.transfer.signed_bytes.hex(), "version": record.version,
        "timestamp_us": record.timestamp_us, "success": record.success, "vm_status": record.vm_status}}) + b"\n"


def read_log(path: Path) -> Iterator[Funded | CommitRecord]:
    """Every whole line of the log in order; a line cut short at the end is dropped from the file."""
    if not path.exists():
        return
    data = path.read_bytes()
    whole = data[:data.rfind(b"\n") + 1]
    if len(whole) != len(data):
        with open(path, "r+b") as handle:
            handle.truncate(len(whole))
            os.fsync(handle.fileno())
    for line in whole.splitlines():
        entry = orjson.loads(line)
        if "fund" in entry:
            funded = entry["fund"]
            yield Funded(funded["asset"], funded["address"], int(funded["amount"]))
        else:
            committed = entry["commit"]
            yield CommitRecord(decode_transfer(bytes.fromhex(committed["signed_bytes"])), committed["version"],
                               committed["timestamp_us"], committed["success"], committed["vm_status"])


class AppendLog:
    """The committed log, open for appending.

    ``sync_through(position)`` returns once the log's first ``position`` bytes are on disk, one fsync at a time
    shared by the callers that wait meanwhile (``SharedSync``), so calls answered together share their syncs.
    """

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.written = os.fstat(self._fd).st_size  # bytes in the log, durable or not
        self._durable = SharedSync(lambda: self.written, synced=self.written)

    def append(self, line: bytes) -> None:
        os.write(self._fd, line)
        self.written += len(line)

    def sync(self) -> None:
        self.sync_through(self.written)

    def sync_through(self, position: int) -> None:
        self._durable.through(position, lambda: os.fsync(self._fd))

    def close(self) -> None:
        self.sync()
        with self._durable.changed:
            os.close(self._fd)


def replace(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a crash leaves the old file or the new one, never half of either."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
