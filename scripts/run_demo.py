"""Initialise a demo ledger (if absent) and print its head: the engine-only `make run`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo import DEMO_LABEL, demo_envelopes, demo_genesis


def main() -> int:
    data_dir = Path(os.environ.get("DATA_DIR", "var/ledger"))
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    with LedgerOwner.open(data_dir, genesis=demo_genesis()) as owner:
        if owner.head().sequence == 0:
            futures = [owner.submit_async(envelope) for envelope in demo_envelopes(seed=1)]
            for future in futures:
                future.result()
        print(f"{DEMO_LABEL}\nledger at {data_dir}: head {owner.head().as_json()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
