"""Demo stage 2: billing, nodes, sessions, grants, receipts, peer fills, holds, day close."""

from __future__ import annotations

from ledger_engine.demo.builder import DemoBuilder
from ledger_engine.demo.foundation import Cast


def build_streaming(builder: DemoBuilder, cast: Cast, *, days: int) -> None:
    del builder, cast, days
