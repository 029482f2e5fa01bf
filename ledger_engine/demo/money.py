"""Demo stage 3: budgets, allocation, statements, payout runs, payments, corrections."""

from __future__ import annotations

from ledger_engine.demo.builder import DemoBuilder
from ledger_engine.demo.foundation import Cast


def build_money(builder: DemoBuilder, cast: Cast, *, days: int) -> None:
    del builder, cast, days
