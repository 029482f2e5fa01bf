"""Budgets: one subscription period's USDC, funded from lots and allocated day by day.

A budget belongs to one period whose payment has cleared. Funding version 1
of a period creates it (the ``funded`` term); each later version is an
approved addition (``additions``) and needs the finance role. Versions are
consecutive and each is taken once
(``unique/budget_funding/<period_id>/<seq20(version)>``). Every version draws
its units from funding lots, never more than a lot has left.

Each funding version ``B_v`` has its own day slices
``floor(B_v*d/D) - floor(B_v*(d-1)/D)``. A day's slice is the sum over the
versions funded before that day is allocated, so with one version it is
exactly the ``S_d`` of docs/spec/allocation-policy.md §1, and whatever the order of additions and
allocations the slices never exceed what was funded.

A refunded period allocates nothing more: its budget's unallocated units
leave it as a refund (refunds.py).

``CheckConservation`` runs the full conservation check (invariants.py) and
records its verdict, which blocks or unblocks payouts.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from ledger_engine.amounts import Amount, checked_sum, format_amount, parse_amount
from ledger_engine.domain.actors import actor_roles
from ledger_engine.domain.allocation_policy import day_slice
from ledger_engine.domain.changes import Changes, require
from ledger_engine.domain.chart import FUNDING_AVAILABLE, budget_unallocated
from ledger_engine.domain.schema.streaming import Period, period_key
from ledger_engine.domain.commands.money.lifecycle import load
from ledger_engine.domain.commands.streaming.policy import day_of
from ledger_engine.domain.invariants import CONSERVATION_KEY, ledger_mismatches
from ledger_engine.domain.postings import credit, debit, post
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import Payload, RuleContext, command
from ledger_engine.domain.schema.money_allocation import (
    Budget, BudgetTerm, BudgetTerms, budget_key, funding_sentinel_key,
)
from ledger_engine.domain.types import Count, Identifier
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE
from ledger_engine.open_json import CommandResult

BUDGET_ASSET = "USDC"
MISMATCHES_KEPT = 100


class LotDraw(Payload):
    lot_id: Identifier
    amount: Amount = Field(gt=0)


class BudgetFunding(Payload):
    budget_id: Identifier
    period_id: Identifier
    version: Annotated[Count, Field(ge=1)]
    draws: list[LotDraw] = Field(min_length=1, max_length=64)

    @field_validator("draws")
    @classmethod
    def _one_draw_per_lot(cls, draws: list[LotDraw]) -> list[LotDraw]:
        lot_ids = [draw.lot_id for draw in draws]
        if lot_ids != sorted(set(lot_ids)):
            raise ValueError("draws must name distinct lots in ID order")
        return draws


def load_budget(changes: Changes, budget_id: str) -> Budget:
    return load(changes, budget_key(budget_id), f"budget {budget_id}", Budget)


def fund_budget(ctx: RuleContext, funding: BudgetFunding) -> CommandResult:
    """Create or add to a period's budget; the caller has taken ``funding.draws`` from their lots."""
    changes = ctx.changes
    period = load(changes, period_key(funding.period_id), f"period {funding.period_id}", Period)
    require(period["clearance"] == "cleared", ErrorCode.INVALID_STATE,
            f"period {funding.period_id}'s payment is {period['clearance']}, not cleared")
    amount = checked_sum(draw.amount for draw in funding.draws)
    changes.claim_unique(funding_sentinel_key(funding.period_id, funding.version),
                         {"budget_id": funding.budget_id, "amount": format_amount(amount)},
                         ErrorCode.ALREADY_EXISTS,
                         f"period {funding.period_id} already has funding version {funding.version}")
    budget = _new_budget(ctx, funding, period) if funding.version == 1 else _addition_target(ctx, funding)
    term: BudgetTerm = "funded" if funding.version == 1 else "additions"
    budget[term] = format_amount(parse_amount(budget[term]) + amount)
    budget["unallocated"] = format_amount(parse_amount(budget["unallocated"]) + amount)
    budget["lots"] = budget["lots"] + [{"lot_id": draw.lot_id, "amount": format_amount(draw.amount),
                                        "version": funding.version} for draw in funding.draws]
    budget["funding_version"] = funding.version
    changes.put_state(budget_key(funding.budget_id), budget)
    post(changes, journal=f"budget_funding:{funding.budget_id}:{funding.version}", asset=BUDGET_ASSET,
         lines=[debit(FUNDING_AVAILABLE, amount), credit(budget_unallocated(funding.budget_id), amount)])
    changes.event("BudgetFunded", budget_id=funding.budget_id, period_id=funding.period_id,
                  version=funding.version, amount=format_amount(amount),
                  lot_ids=[draw.lot_id for draw in funding.draws])
    return {"budget_id": funding.budget_id, "version": funding.version, "amount": format_amount(amount)}


def _new_budget(ctx: RuleContext, funding: BudgetFunding, period: Period) -> Budget:
    require(ctx.changes.get(STATE, budget_key(funding.budget_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"budget {funding.budget_id} already exists")
    require(period["days"] >= 1, ErrorCode.INVALID_REFERENCE, f"period {funding.period_id} has no days")
    return {
        "budget_id": funding.budget_id,
        "period_id": funding.period_id,
        "listener_id": period["account_id"],
        "asset": BUDGET_ASSET,
        "days": period["days"],
        "first_day": day_of(period["start_ms"]),
        "funded": "0",
        "additions": "0",
        "unallocated": "0",
        "outstanding": "0",
        "paid": "0",
        "refunds_reversals": "0",
        "lots": [],
        "funding_version": 0,
        "correlation_id": f"period:{funding.period_id}",
        "created": created(ctx),
    }


def _addition_target(ctx: RuleContext, funding: BudgetFunding) -> Budget:
    require("finance" in actor_roles(ctx, ctx.actor_id), ErrorCode.CAPABILITY_MISSING,
            "additions to a funded budget need the finance role")
    budget = load_budget(ctx.changes, funding.budget_id).copy()
    require(budget["period_id"] == funding.period_id, ErrorCode.INVALID_REFERENCE,
            f"budget {funding.budget_id} funds period {budget['period_id']}, not {funding.period_id}")
    require(funding.version == budget["funding_version"] + 1, ErrorCode.INVALID_STATE,
            f"budget {funding.budget_id}: the next funding version is {budget['funding_version'] + 1}")
    return budget


def version_amounts(budget: BudgetTerms) -> list[int]:
    """What each funding version brought, in version order."""
    totals: dict[int, int] = {}
    for entry in budget["lots"]:
        totals[entry["version"]] = totals.get(entry["version"], 0) + parse_amount(entry["amount"])
    return [totals[version] for version in sorted(totals)]


def day_index(budget: BudgetTerms, day: int) -> int:
    """A UTC day number's position ``d`` in the budget's period, counting from 1."""
    return day - budget["first_day"] + 1


def slice_for_day(budget: BudgetTerms, day: int) -> int:
    index = day_index(budget, day)
    return checked_sum(day_slice(amount, index, budget["days"]) for amount in version_amounts(budget))


class CheckConservationPayload(Payload):
    check_id: Identifier


@command("CheckConservation", payload=CheckConservationPayload, roles={"finance", "ops", "maintenance", "auditor"})
def check_conservation(ctx: RuleContext, p: CheckConservationPayload) -> CommandResult:
    """Check every budget, lot, line and correction; any mismatch blocks payouts until a clean check."""
    mismatches = ledger_mismatches(ctx.changes)
    status = "blocked" if mismatches else "clear"
    ctx.changes.put_state(CONSERVATION_KEY, {
        "status": status,
        "check_id": p.check_id,
        "checked_at_sequence": ctx.sequence,
        "checked_at_ms": ctx.now_ms,
        "mismatch_count": len(mismatches),
        "mismatches": [m.as_json() for m in mismatches[:MISMATCHES_KEPT]],
    })
    ctx.changes.event("ConservationChecked", check_id=p.check_id, status=status, mismatch_count=len(mismatches))
    return {"status": status, "mismatch_count": len(mismatches)}
