"""Search (every console role): a pasted ID, transaction hash, payout address or recipient's name opens its record's
page.

The term is posted, never put in a URL, so neither the request log nor the browser's history holds it: one exact
match is a 303 to the record's sealed-handle page; several, or fragments, are listed on the answer to the post;
none says so with the term still in the field (docs/adr/0095).
"""

from __future__ import annotations

from django import forms
from django.http import HttpResponseRedirect
from django.urls import reverse

from ledger_engine.selectors.search_queries import FoundRecord
from porto_console.console.handles import seal
from porto_console.console.roles import user_roles
from porto_console.console.services import record_search as service
from porto_console.console.views.accounting import RECORD_HANDLES
from porto_console.console.views.common import render_screen
from porto_console.console.views.corrections import correction_url
from porto_console.console.views.holds import hold_url
from porto_console.console.views.payouts import run_url
from porto_console.ledger import LedgerRead, read_view

TITLE = "Find a record"
MAX_TERM = 200


class SearchForm(forms.Form):
    term = forms.CharField(max_length=MAX_TERM, label="Run, payment, recipient, hold or correction ID, "
                                                      "transaction hash, payout address or recipient's name",
                           error_messages={"required": "Type or paste an ID, a transaction hash, a payout address "
                                                       "or a recipient's name."})

    def clean_term(self) -> str:
        term = service.cleaned(self.cleaned_data["term"])
        if not service.without_ellipsis(term):
            raise forms.ValidationError(self.fields["term"].error_messages["required"], code="required")
        return term


def search(request):
    if request.method != "POST":  # a term in the query string is never read: it would sit in the request log
        return _page(request, SearchForm(), None, read_view(lambda _view: None))
    form = SearchForm(request.POST)
    if not form.is_valid():
        return _page(request, form, None, read_view(lambda _view: None), status=400)
    roles = user_roles(request.user)
    read = read_view(lambda view: service.search(view, form.cleaned_data["term"], roles))
    if read.data.single is not None:
        return HttpResponseRedirect(record_url(read.data.single), status=303)
    return _page(request, form, read.data, read)


def _page(request, form: SearchForm, found: service.Found | None, read: LedgerRead, status: int = 200):
    rows = [(record, service.KIND_NAMES[record.kind], record_url(record)) for record in found.records] if found else []
    kinds = _either([service.KIND_NAMES[kind] for kind in service.searchable_kinds(user_roles(request.user))])
    response = render_screen(request, "console/search.html", TITLE, read, form=form, found=found, rows=rows,
                             kinds=kinds, most_listed=service.MOST_LISTED, min_fragment=service.MIN_FRAGMENT)
    response.status_code = status
    return response


def _either(names: list[str]) -> str:
    """``run, payment or hold``."""
    return " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def record_url(record: FoundRecord) -> str:
    """The record's own page: a run's, a hold's or a correction's; a payment's or a recipient's journal entries."""
    pages = {"run": run_url, "hold": hold_url, "correction": correction_url}
    if record.kind in pages:
        return pages[record.kind](record.record_id)
    return reverse("admin:console-record-history", args=[record.kind, seal(RECORD_HANDLES[record.kind],
                                                                          record.record_id)])
