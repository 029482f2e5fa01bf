"""What the ledger made of a stage's envelopes, for the stages after it.

Closing a listener-day computes its eligible listening and served bytes inside
the rules; rather than compute them a second way, the scenario runs the
envelopes so far through a scratch ledger and reads the records back.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ledger_engine.application.owner import LedgerOwner
from ledger_engine.demo.foundation import Cast
from ledger_engine.layout import STATE
from ledger_engine.open_json import Document, Unvalidated

EVERYTHING = 2**62


def observe_streaming(cast: Cast, envelopes: list[Unvalidated], genesis: Document) -> None:
    """Fill ``cast.periods`` (cleared ones) and ``cast.closed_days`` from a scratch run of ``envelopes``."""
    with tempfile.TemporaryDirectory(prefix="porto-demo-") as scratch:
        with LedgerOwner.open(Path(scratch) / "ledger", genesis=genesis, max_group=256) as owner:
            for future in [owner.submit_async(envelope) for envelope in envelopes]:
                future.result()
            cast.periods = [value["data"] for _, value in owner.scan(STATE, "period/", limit=EVERYTHING)
                            if value["data"]["clearance"] == "cleared"]
            cast.closed_days = [value["data"] for _, value in owner.scan(STATE, "listener_day/", limit=EVERYTHING)
                                if value["data"]["status"] == "closed"]
