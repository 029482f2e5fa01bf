"""Budgets and balances (finance, auditor): conservation equations and payables per recipient."""

from __future__ import annotations

from django import forms

from porto_console.console.paging import page_number, paginate
from porto_console.console.screens import BUDGETS
from porto_console.console.services import budgets as service
from porto_console.console.views.common import filter_values, render_screen
from porto_console.ledger import read_at_boundary


class BudgetFilter(forms.Form):
    balanced = forms.ChoiceField(choices=[("", "all budgets"), ("yes", "balanced"), ("no", "not balanced")],
                                 required=False)


def budget_list(request):
    filters = filter_values(BudgetFilter(request.GET or None))
    read = read_at_boundary(lambda ledger: paginate(service.budgets(ledger, **filters), page_number(request)))
    return render_screen(request, "console/budgets.html", BUDGETS.title, read, page=read.data,
                         filter_form=BudgetFilter(request.GET or None))


def balances(request):
    read = read_at_boundary(lambda ledger: paginate(service.recipient_balances(ledger), page_number(request)))
    return render_screen(request, "console/balances.html", "Payables per recipient", read, page=read.data)
