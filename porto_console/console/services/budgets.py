"""Budgets and balances: each budget's conservation equation with its terms, and what each recipient is owed."""

from __future__ import annotations

from ledger_engine.amounts import checked_sum, parse_amount
from ledger_engine.domain.invariants import FUNDING_TERMS, HOLDING_TERMS, OPTIONAL_TERMS
from ledger_engine.open_json import IndexValue, Report
from ledger_engine.selectors import account_queries, budget_queries
from ledger_engine.selectors.view import LedgerView


def budgets(view: LedgerView, *, balanced: str = "") -> list[Report]:
    """Budgets with both sides of
    ``funded + additions == unallocated + outstanding + paid + refunds_reversals + frozen``;
    ``frozen`` is shown only where a freeze moved something into it. Each carries its period's first UTC day, which
    the screen's date range selects by."""
    first_days = budget_queries.budget_first_days(view)
    return [{**_equation(summary), "first_day": first_days.get(summary["budget_id"])}
            for summary in budget_queries.budget_summaries(view)
            if not balanced or summary["balanced"] == (balanced == "yes")]


def _equation(summary: IndexValue) -> Report:
    terms = {term: summary.get(term, "0") for term in (*FUNDING_TERMS, *HOLDING_TERMS)}
    holding = [term for term in HOLDING_TERMS if term not in OPTIONAL_TERMS or parse_amount(terms[term])]
    return {**summary,
            "funding": [(term, terms[term]) for term in FUNDING_TERMS],
            "holding": [(term, terms[term]) for term in holding],
            "funding_total": str(checked_sum(parse_amount(terms[term]) for term in FUNDING_TERMS)),
            "holding_total": str(checked_sum(parse_amount(terms[term]) for term in HOLDING_TERMS))}


def recipient_balances(view: LedgerView) -> list[Report]:
    """Per recipient: allocation lines payable, reserved in approved runs, and paid; by recipient ID."""
    return [{"recipient_id": recipient_id, **{column: str(amount) for column, amount in totals.items()}}
            for recipient_id, totals in budget_queries.recipient_totals(view).items()]


def recipient_names(view: LedgerView, balances: list[Report]) -> dict[str, str]:
    """The display name of each recipient of ``balances`` that has one, for the export that names them."""
    return account_queries.display_names(view, {row["recipient_id"] for row in balances})
