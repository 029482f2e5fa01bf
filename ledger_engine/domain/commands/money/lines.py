"""Allocation lines and budget terms: the records both sides of the money domain move.

An allocation line is one payable amount owed to one recipient from one
listener-day, or, as a *day line* with no budget, from one frozen chunk of a
day (ledger_engine/domain/day_lines.py). Its life: payable -> reserved (payout
run approved) -> paid (transfer confirmed); reserved -> payable when a run is
cancelled; payable -> reversed by a correction (a day line by a correction of
a frozen listener-day). A budget tracks the terms of its conservation equation:

    funded + additions == unallocated + outstanding + paid + refunds_reversals + frozen

``frozen`` is written only when a freeze moves it (docs/adr/0073) and reads as
zero where it is absent.
"""

from __future__ import annotations

from typing import Any

from ledger_engine.amounts import format_amount
from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.invariants import HOLDING_TERMS, term_amount
from ledger_engine.domain.schema.money_allocation import AllocationLine, Budget, BudgetTerm, budget_key, line_key
from ledger_engine.domain.view import with_fields
from ledger_engine.errors import ErrorCode

LINE_STATUSES = ("payable", "reserved", "paid", "reversed")


def load_line(changes: Changes, line_id: str) -> AllocationLine:
    return load(changes, line_key(line_id), f"allocation line {line_id}", AllocationLine)


def set_line_status(changes: Changes, line_id: str, expected: str, status: str, **references: Any) -> AllocationLine:
    """Move a line from ``expected`` to ``status``, recording references such as run or payment IDs."""
    assert status in LINE_STATUSES, status
    line = load_line(changes, line_id)
    require(line["status"] == expected, ErrorCode.INVALID_STATE,
            f"allocation line {line_id} is {line['status']}, not {expected}")
    updated = with_fields(line, status=status, **references)
    changes.put_state(line_key(line_id), updated)
    return updated


def move_budget(changes: Changes, budget_id: str, source: BudgetTerm, target: BudgetTerm, amount: int) -> None:
    """Move ``amount`` between two holding terms; the funding side and the equation stay as they were.

    Only the two terms named are written, so a budget gains ``frozen`` only when a move names it."""
    assert source in HOLDING_TERMS and target in HOLDING_TERMS, (source, target)
    budget = load(changes, budget_key(budget_id), f"budget {budget_id}", Budget).copy()
    available = term_amount(budget, source)
    require(available >= amount, ErrorCode.INVARIANT_VIOLATION,
            f"budget {budget_id}: {source} {available} cannot give {amount}")
    budget[source] = format_amount(available - amount)
    budget[target] = format_amount(term_amount(budget, target) + amount)
    changes.put_state(budget_key(budget_id), budget)
