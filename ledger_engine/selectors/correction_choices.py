"""What a correction request chooses from: a budget's listener-days, their lines, the works, nodes and recipients.

Each takes a ``LedgerView`` (selectors/view.py). A budget's listener-day
lines are those its allocation wrote (the listener-day's allocation sentinel
names them) and the replacements approved corrections wrote since (each
``correction/<id>`` names its listener-day); nothing scans every line. None of
this backs a money check: ``RequestCorrection`` checks each line again.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from ledger_engine.domain.commands.money.corrections import is_reversible
from ledger_engine.domain.schema.money_allocation import (
    AllocationLine, AllocationSentinel, Budget, Correction, allocation_sentinel_key, budget_key, budget_refund_key,
    correction_key, line_key,
)
from ledger_engine.domain.schema.streaming import RightsVersion, Work, rights_key
from ledger_engine.domain.view import shaped
from ledger_engine.keys import key
from ledger_engine.layout import UNIQUE
from ledger_engine.selectors.view import LedgerView

CORRECTION_BY_BUDGET_PREFIX = key("correction_by_budget")
WORK_PREFIX = key("work") + "/"
NODE_PREFIX = key("node") + "/"


@dataclass(frozen=True, slots=True)
class LineChoice:
    """One line of a listener-day, and why it cannot be reversed (``None`` when it can)."""

    line: AllocationLine
    why_not: str | None

    @property
    def reversible(self) -> bool:
        return self.why_not is None


@dataclass(frozen=True, slots=True)
class ActiveWork:
    work_id: str
    rights_version: int
    splits: tuple[tuple[str, int], ...]  # (recipient ID, basis points), as the version lists them


def budget_refunded(view: LedgerView, budget_id: str) -> bool:
    """Whether the budget's subscription was refunded: nothing may go back into it."""
    return view.record(budget_refund_key(budget_id)) is not None


def correctable_days(view: LedgerView, budget_id: str) -> list[tuple[str, int]]:
    """The budget's listener-days with a line that can be reversed now, as ``(listener ID, day)`` in day order."""
    return [listener_day for listener_day, lines in _lines_by_day(view, budget_id).items()
            if any(why_not(line) is None for line in lines)]


def listener_day_lines(view: LedgerView, budget_id: str, listener_id: str, day: int) -> list[LineChoice]:
    """The listener-day's lines of the budget, each with why it cannot be reversed, by line ID."""
    lines = _lines_by_day(view, budget_id).get((listener_id, day), [])
    return [LineChoice(line, why_not(line)) for line in sorted(lines, key=lambda line: line["line_id"])]


def why_not(line: AllocationLine) -> str | None:
    """Why ``RequestCorrection`` would refuse to reverse the line now, in words; ``None`` if it would not.

    The rule is the command's (``is_reversible`` and ``_reversible`` in domain/commands/money/corrections.py):
    payable lines and Porto's share, under no other correction."""
    if line.get("pending_correction"):
        return f"held for correction {line['pending_correction']}"
    if is_reversible(line):
        return None
    if line["status"] == "reserved":
        return f"reserved in payout run {line['run_id']}"
    if line["status"] == "reversed":
        return f"reversed by correction {line['reversed_by']}"
    return line["status"]


def active_works(view: LedgerView) -> list[ActiveWork]:
    """Every active work at its current rights version, with that version's splits, by work ID."""
    found = []
    for _key, record in view.records(WORK_PREFIX):
        work = record.data_as(Work)
        if work["status"] != "active":
            continue
        rights = view.require(rights_key(work["work_id"], work["rights_version"]), f"rights of {work['work_id']}",
                              RightsVersion)
        found.append(ActiveWork(work["work_id"], work["rights_version"], tuple(
            (share["recipient_id"], share["split_bps"]) for share in rights["recipients"])))
    return found


def node_operators(view: LedgerView) -> dict[str, str]:
    """Each node's operator, by node ID."""
    return {record.data["node_id"]: record.data["operator_id"] for _key, record in view.records(NODE_PREFIX)}


def _lines_by_day(view: LedgerView, budget_id: str) -> dict[tuple[str, int], list[AllocationLine]]:
    record = view.record(budget_key(budget_id))
    if record is None:
        return {}
    budget = record.data_as(Budget)
    listener_id, first_day = budget["listener_id"], budget["first_day"]
    line_ids: dict[tuple[str, int], list[str]] = {}
    for day in range(first_day, first_day + budget["days"]):
        allocation = _allocation(view, listener_id, day)
        if allocation is not None and allocation.get("budget_id") == budget_id:
            line_ids[(listener_id, day)] = list(allocation["line_ids"])
    for (correction_id,), _entry in view.entries(f"{CORRECTION_BY_BUDGET_PREFIX}/{budget_id}/"):
        correction = view.require(correction_key(correction_id), f"correction {correction_id}", Correction)
        if correction["listener_day"]:
            listener_day = (correction["listener_day"][0], correction["listener_day"][1])
            line_ids.setdefault(listener_day, []).extend(correction["replacements"])
    return {listener_day: [view.require(line_key(line_id), f"allocation line {line_id}", AllocationLine)
                           for line_id in ids]
            for listener_day, ids in sorted(line_ids.items(), key=lambda item: (item[0][1], item[0][0]))}


def _allocation(view: LedgerView, listener_id: str, day: int) -> AllocationSentinel | None:
    raw = view.get(UNIQUE, allocation_sentinel_key(listener_id, day).encode())
    if raw is None:
        return None
    value = orjson.loads(raw)
    return shaped(value.get("data", value), AllocationSentinel)
