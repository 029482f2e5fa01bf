"""Allocate days (finance): the owner splits each day on every core and freezes it chunk by chunk (docs/adr/0073).

Finance names one UTC day or a range; the request and its progress are ledger records, so the page survives a
reload and the owner goes on after a restart where it stopped. The result names every listener-day the owner
could not freeze and the code that refused it.
"""

from __future__ import annotations

from datetime import date

from django import forms
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse

from ledger_engine.domain.commands.money.allocate_day import MAX_REQUEST_DAYS
from ledger_engine.selectors import day_allocation_queries
from porto_console.console import actions
from porto_console.console.forms import CommandForm
from porto_console.console.handles import seal, unseal_id
from porto_console.console.roles import may_submit
from porto_console.console.screens import DAY_ALLOCATION
from porto_console.console.services import day_allocation as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import owner, read_view

HANDLE = "day-allocation"


class AllocateForm(CommandForm):
    first = forms.DateField(label="First day (UTC)", widget=forms.DateInput(attrs={"type": "date"}))
    last = forms.DateField(label="Last day (UTC)", required=False, widget=forms.DateInput(attrs={"type": "date"}),
                           help_text=f"Leave empty for one day; at most {MAX_REQUEST_DAYS} days.")

    def clean(self) -> dict:
        data = super().clean()
        first: date | None = data.get("first")
        last: date | None = data.get("last") or first
        if first and last and not 0 <= (last - first).days < MAX_REQUEST_DAYS:
            raise forms.ValidationError(f"The last day is the first day or up to {MAX_REQUEST_DAYS - 1} days after it.")
        data["last"] = last
        return data


def request_list(request):
    form = AllocateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = actions.run(request, data["command_id"], "AllocateDay",
                                  lambda: service.request(data["command_id"], data["first"], data["last"]))
        except actions.ActionRefused as error:
            form.add_error(None, str(error))
        else:
            actions.report(request, outcome, "Days requested: the ledger's owner is splitting and freezing them")
            request_id = service.request_id_for(data["command_id"])
            if outcome.accepted:
                service.start(owner(), request_id)
                return redirect(request_url(request_id))
    read = read_view(day_allocation_queries.day_allocations)
    return render_screen(request, "console/day_allocation.html", DAY_ALLOCATION.title, read, form=form,
                         rows=[(item, seal(HANDLE, item["request_id"])) for item in read.data],
                         may_request=may_submit(request.user, "AllocateDay"))


def request_detail(request, handle: str):
    request_id = unseal_id(HANDLE, handle)
    read = read_view(lambda view: day_allocation_queries.day_allocation(view, request_id))
    if read.data is None:
        raise Http404("no such day allocation")
    return render_screen(request, "console/day_allocation_request.html", f"Day allocation {request_id}", read,
                         allocation=read.data)


def request_url(request_id: str) -> str:
    return reverse("admin:console-day-allocation-request", args=[seal(HANDLE, request_id)])
