"""Accounting screens (read-only): trial balance, account and recipient statements, a record's journal entries,
CSV of each, and the full conservation check on demand."""

from __future__ import annotations

from datetime import date

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ledger_engine.domain.ruleset import ASSETS
from ledger_engine.errors import LedgerError
from ledger_engine.selectors import accounting as selectors
from ledger_engine.selectors import trial_replay
from porto_console.console import actions
from porto_console.console.commands import CommandRequest
from porto_console.console.forms import CommandForm
from porto_console.console.handles import seal, unseal_ids
from porto_console.console.screens import DASHBOARD
from porto_console.console.services import accounting as service
from porto_console.console.services import journal
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_view

CONSERVATION_COMMAND = "CheckConservation"
RECORD_HANDLES = {"run": "run", "hold": "hold", "payment": "payment", "correction": "correction",
                  "staff_change": "staff-change", "recipient_update": "recipient-update",
                  "recipient": "recipient", "budget": "budget"}  # record kind -> its handle's kind
EPOCH, LAST_DAY = date(1970, 1, 1), date(9999, 12, 30)  # an open range: every posting, whatever the ledger's clock


class TrialBalanceForm(forms.Form):
    sequence = forms.IntegerField(min_value=1, required=False, label="At sequence")
    replay = forms.BooleanField(required=False, label="Check against a replay of the journal")


class StatementForm(forms.Form):
    account = forms.ChoiceField(required=False, label="Posting account")
    recipient = forms.CharField(max_length=200, required=False, label="or recipient")
    asset = forms.ChoiceField(choices=[(asset, asset) for asset in ASSETS], initial="USDC")
    first = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    last = forms.DateField(required=False, label="to", widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, *args, accounts: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["account"].choices = [("", "choose an account"), *((account, account) for account in accounts)]

    def clean(self) -> dict:
        data = super().clean()
        first, last = data.get("first") or EPOCH, data.get("last") or LAST_DAY
        if first > last:
            raise forms.ValidationError("The first day comes after the last.")
        data["first"], data["last"] = first, last
        return data


def sealed(records: list[selectors.TouchedRecord]) -> list[tuple[selectors.TouchedRecord, str]]:
    """The runs, payments and holds a journal entry wrote, each with the handle its page opens by."""
    return [(record, seal(RECORD_HANDLES[record.kind], record.record_id)) for record in records]


def postings_download(postings: list, sequence: int) -> HttpResponse:
    return _csv(service.postings_csv(postings), f"postings-{sequence}.csv")


def _csv(content: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def trial_balance(request):
    form = TrialBalanceForm(request.GET or None)
    wanted = form.cleaned_data["sequence"] if form.is_valid() else None
    replay = form.is_valid() and form.cleaned_data["replay"]
    try:
        read = read_view(lambda view: _trial_balance(view, wanted, replay))
    except LedgerError as error:
        return render_screen(request, "console/trial_balance.html", "Trial balance", read_view(lambda _: None),
                             form=form, trial=None, problem=f"{error.code}: {error.detail}")
    trial, comparison = read.data
    if request.GET.get("format") == "csv":
        return _csv(service.trial_balance_csv(trial), f"trial-balance-{trial.sequence}.csv")
    return render_screen(request, "console/trial_balance.html", "Trial balance", read, form=form, trial=trial,
                         totals=sorted(trial.totals.items()), comparison=comparison)


def _trial_balance(view, wanted: int | None, replay: bool):
    """The trial balance at ``wanted`` (the head if later or unset), and its replay check when asked for."""
    trial = selectors.trial_balance(view, at_sequence=min(wanted, view.sequence) if wanted else None)
    return trial, trial_replay.compare(trial, view) if replay else None


def statement(request):
    accounts = read_view(selectors.posting_accounts).data
    form = StatementForm(request.GET or None, accounts=sorted({account for _, account in accounts}))
    chosen = _statement_accounts(form)
    from_ms, to_ms = service.range_ms(*_days(form)) if chosen else (0, 0)
    read = read_view(lambda view: selectors.account_statement(
        view, chosen, form.cleaned_data["asset"], from_ms=from_ms, to_ms=to_ms) if chosen else None)
    if read.data is not None and request.GET.get("format") == "csv":
        return _csv(service.statement_csv(read.data), "statement.csv")
    return render_screen(request, "console/statement.html", "Account statement", read, form=form,
                         statement=read.data)


def _statement_accounts(form: StatementForm) -> tuple[str, ...]:
    if not form.is_valid():
        return ()
    if form.cleaned_data["recipient"]:
        return selectors.recipient_accounts(form.cleaned_data["recipient"])
    return (form.cleaned_data["account"],) if form.cleaned_data["account"] else ()


def _days(form: StatementForm) -> tuple[date, date]:
    return form.cleaned_data["first"], form.cleaned_data["last"]


def record_history(request, kind: str, handle: str):
    """The journal entries that wrote one run, payment, hold, correction, staff change, recipient update, recipient or
    budget."""
    if kind not in RECORD_HANDLES:
        raise Http404("no such record kind")
    record_id = "/".join(unseal_ids(RECORD_HANDLES[kind], handle, selectors.RECORD_ID_PARTS.get(kind, 1)))
    read = read_view(lambda view: journal.record_entries(view, kind, record_id))
    return render_screen(request, "console/record_history.html", f"Journal entries of {kind} {record_id}", read,
                         kind=kind, record_id=record_id, entries=read.data)


@require_POST
def check_conservation(request):
    """Run the full conservation check now: the ledger records its verdict, which the dashboard shows."""
    form = CommandForm(request.POST)
    if form.is_valid():
        command_id = form.cleaned_data["command_id"]
        try:
            outcome = actions.run(request, command_id, CONSERVATION_COMMAND,
                                  lambda: CommandRequest(CONSERVATION_COMMAND, {"check_id": command_id}))
        except actions.ActionRefused as error:
            messages.error(request, str(error))
        else:
            actions.report(request, outcome, "Full conservation check recorded")
    return redirect(f"admin:{DASHBOARD.url_name}")
