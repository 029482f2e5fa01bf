"""A refunded subscription period: its budget allocates nothing more, and gives up what it has not allocated.

ApplyBillingObservation's ``payment_refunded`` calls ``refund_period_budget``.
The budget's ``unallocated`` units leave it as a refund, counted in the
``refunds_reversals`` term of the conservation equation (docs/spec/ledger-invariants.md §2) and recorded once at
``budget_refund/<budget_id>``; AllocateListenerDay refuses the period from
then on. Lines already allocated stay as they are: the listening happened,
and reversing a line is a correction one finance actor requests and another
decides. A period that was never funded has no budget to refund.

    Dr budget_unallocated:<budget>   Cr subscription_refunds
"""

from __future__ import annotations

from ledger_engine.amounts import format_amount, parse_amount
from ledger_engine.domain.changes import require
from ledger_engine.domain.chart import SUBSCRIPTION_REFUNDS, budget_unallocated
from ledger_engine.domain.commands.money.lines import move_budget
from ledger_engine.domain.invariants import require_conserved
from ledger_engine.domain.postings import credit, debit, post
from ledger_engine.domain.provenance import created
from ledger_engine.domain.registry import RuleContext
from ledger_engine.domain.schema.money_allocation import (
    Budget, BudgetRefund, budget_key, budget_refund_key, funding_sentinel_key,
)
from ledger_engine.domain.schema.streaming import Period
from ledger_engine.errors import ErrorCode
from ledger_engine.layout import STATE, UNIQUE

REFUND_ASSET = "USDC"


def refund_period_budget(ctx: RuleContext, period: Period, billing_event_id: str) -> BudgetRefund | None:
    changes = ctx.changes
    funded = changes.get(UNIQUE, funding_sentinel_key(period["period_id"], 1))
    if funded is None:
        return None
    budget_id = funded.data["budget_id"]
    require(changes.get(STATE, budget_refund_key(budget_id)) is None, ErrorCode.ALREADY_EXISTS,
            f"budget {budget_id} was already refunded")
    budget = changes.get(STATE, budget_key(budget_id))
    assert budget is not None, f"funding version 1 of period {period['period_id']} created budget {budget_id}"
    amount = parse_amount(budget.data_as(Budget)["unallocated"])
    refund: BudgetRefund = {"budget_id": budget_id, "period_id": period["period_id"], "amount": format_amount(amount),
                            "billing_event_id": billing_event_id, "refunded_at_ms": ctx.now_ms,
                            "correlation_id": f"period:{period['period_id']}", "created": created(ctx)}
    changes.put_state(budget_refund_key(budget_id), refund)
    move_budget(changes, budget_id, "unallocated", "refunds_reversals", amount)
    post(changes, journal=f"refund:{budget_id}", asset=REFUND_ASSET,
         lines=[debit(budget_unallocated(budget_id), amount), credit(SUBSCRIPTION_REFUNDS, amount)])
    changes.event("BudgetRefunded", budget_id=budget_id, period_id=period["period_id"], amount=refund["amount"])
    require_conserved(changes)
    return refund
