"""The SIMULATED chain's durable state: one canonical JSON document, replaced atomically and fsynced.

Transactions are kept as their signed bytes and decoded again on load, so
what the chain resumes with is exactly what it accepted. Amounts and clock
offsets are integers (micro-units, microseconds).
"""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from porto_console.effects.transactions import decode_transfer

if TYPE_CHECKING:
    from porto_console.effects.simulated_chain import SimulatedChain

FORMAT = "porto-simulated-chain-state/v1"


def dump(chain: "SimulatedChain") -> dict[str, Any]:
    return {
        "format": FORMAT,
        "chain": "SIMULATED",
        "chain_id": chain.chain_id,
        "offset_us": int(chain._offset_secs * 1_000_000),
        "version": chain._version,
        "accounts": {address: {"sequence_number": account.sequence_number,
                               "mempool": {str(sequence): transfer.signed_bytes.hex()
                                           for sequence, transfer in sorted(account.mempool.items())}}
                     for address, account in sorted(chain._accounts.items())},
        "balances": [[asset, address, str(amount)] for (asset, address), amount in sorted(chain._balances.items())],
        "committed": [{"signed_bytes": c.transfer.signed_bytes.hex(), "version": c.version,
                       "timestamp_us": c.timestamp_us, "success": c.success, "vm_status": c.vm_status}
                      for c in sorted(chain._committed.values(), key=lambda c: c.version)],
        "held": sorted(chain._held),
        "transfers_before_hold": chain._transfers_before_hold,
        "faults": [{"kind": f.kind, "hold_ms": int(f.hold_seconds * 1000), "vm_status": f.vm_status}
                   for f in chain._faults],
    }


def load(chain: "SimulatedChain", state: dict[str, Any]) -> None:
    from porto_console.effects.simulated_chain import Account, Committed, Fault

    assert state["format"] == FORMAT and state["chain"] == "SIMULATED", "not a SIMULATED chain state file"
    assert state["chain_id"] == chain.chain_id, f"the state file is for chain id {state['chain_id']}"
    chain._offset_secs = state["offset_us"] / 1_000_000
    chain._version = state["version"]
    chain._accounts = {address: Account(entry["sequence_number"],
                                        {int(sequence): decode_transfer(bytes.fromhex(data))
                                         for sequence, data in entry["mempool"].items()})
                       for address, entry in state["accounts"].items()}
    chain._balances = {(asset, address): int(amount) for asset, address, amount in state["balances"]}
    committed = [Committed(decode_transfer(bytes.fromhex(c["signed_bytes"])), c["version"], c["timestamp_us"],
                           c["success"], c["vm_status"]) for c in state["committed"]]
    chain._committed = {c.transfer.transaction_hash: c for c in committed}
    chain._held = set(state["held"])
    chain._transfers_before_hold = state.get("transfers_before_hold")
    chain._faults = deque(Fault(f["kind"], f["hold_ms"] / 1000, f["vm_status"]) for f in state["faults"])
    assert len(chain._committed) == chain._version, "committed transactions and the version disagree"


def write(path: Path, state: dict[str, Any]) -> None:
    """Replace ``path`` with ``state``: a crash leaves the old file or the new one, never half of either."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        handle.write(orjson.dumps(state, option=orjson.OPT_SORT_KEYS))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
