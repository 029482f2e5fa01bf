"""Budgets and balances (finance, auditor): conservation equations and payables per recipient."""

from __future__ import annotations

from django import forms

from ledger_engine.domain.commands.money.budgets import BUDGET_ASSET
from ledger_engine.domain.invariants import FUNDING_TERMS, HOLDING_TERMS
from porto_console.console import exports
from porto_console.console.listing import DAY_MS, DateRange, Listing, Search, by, by_amount, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.screens import BUDGETS
from porto_console.console.services import budgets as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_view


class BudgetBalance(forms.Form):
    balanced = forms.ChoiceField(choices=[("", "all budgets"), ("yes", "balanced"), ("no", "not balanced")],
                                 required=False)


BUDGET_LISTING = Listing(
    searches=(Search("budget", "Budget", text("budget_id")), Search("listener", "Listener", text("listener_id")),
              Search("period", "Period", text("period_id"))),
    dated=DateRange("period", "Period starts from",
                    lambda row: None if row["first_day"] is None else row["first_day"] * DAY_MS),
    sorts={"budget": by("budget_id"), "listener": by("listener_id"), "funding": by_amount("funding_total"),
           "holding": by_amount("holding_total")},
    default_sort="budget", identity=by("budget_id"), descending_first=frozenset({"funding", "holding"}))
BudgetFilter = BUDGET_LISTING.form_class(BudgetBalance)
BALANCE_LISTING = Listing(
    searches=(Search("recipient", "Recipient ID", text("recipient_id")),),
    sorts={"recipient": by("recipient_id"), "payable": by_amount("payable"), "reserved": by_amount("reserved"),
           "paid": by_amount("paid")},
    default_sort="recipient", identity=by("recipient_id"), descending_first=frozenset({"payable", "reserved", "paid"}))
BalanceFilter = BALANCE_LISTING.form_class()


def budget_list(request):
    filter_form = BudgetFilter(request.GET or None)
    query, filters = filter_form.query(), filter_form.filters()
    if exports.wanted(request):
        found = read_view(lambda view: _budgets(view, filters, query)).data
        return exports.listed("budgets", exports.budget_header(FUNDING_TERMS, HOLDING_TERMS),
                              exports.budget_cells((*FUNDING_TERMS, *HOLDING_TERMS), BUDGET_ASSET), found, query)
    read = read_view(lambda view: paginate(_budgets(view, filters, query), page_number(request)))
    return render_screen(request, "console/budgets.html", BUDGETS.title, read, page=read.data, query=query,
                         filter_form=filter_form)


def _budgets(view, filters: dict, query) -> list[dict]:
    """The budgets matching the filters and ``query``."""
    return BUDGET_LISTING.apply(service.budgets(view, **filters), query)


def balances(request):
    filter_form = BalanceFilter(request.GET or None)
    query = filter_form.query()
    if exports.wanted(request):
        listed = read_view(lambda view: _named_balances(view, query))
        rows, names = listed.data
        return exports.table(exports.BALANCE_HEADER, exports.balance_cells(BUDGET_ASSET, names.get), rows,
                             exports.filename("payables-per-recipient", at=f"at-sequence-{listed.head.sequence}"))
    read = read_view(lambda view: paginate(BALANCE_LISTING.apply(service.recipient_balances(view), query),
                                           page_number(request)))
    return render_screen(request, "console/balances.html", "Payables per recipient", read, page=read.data,
                         query=query, filter_form=filter_form)


def _named_balances(view, query) -> tuple[list[dict], dict[str, str]]:
    """The balances matching ``query``, and their recipients' display names, read in one view."""
    rows = BALANCE_LISTING.apply(service.recipient_balances(view), query)
    return rows, service.recipient_names(view, rows)
