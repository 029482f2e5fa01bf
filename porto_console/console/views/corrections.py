"""Corrections (finance): request a reversal and replacement of allocation lines; another user decides it."""

from __future__ import annotations

import json

from django import forms
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from porto_console.console import actions
from porto_console.console.forms import CommandForm, StepUpForm
from porto_console.console.handles import seal, unseal_id
from porto_console.console.listing import REQUESTED, Listing, Search, by, by_amount, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import may_submit
from porto_console.console.screens import CORRECTIONS
from porto_console.console.services import corrections as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import owner, read_at_boundary

HANDLE = "correction"
SHA256 = r"^[0-9a-f]{64}$"


class CorrectionStatuses(forms.Form):
    status = forms.ChoiceField(choices=[(s, s) for s in service.STATUSES], required=False)


AMOUNT_COLUMNS = ("reversed", "replaced", "refunded")
CORRECTION_LISTING = Listing(
    searches=(Search("correction", "Correction ID", text("correction_id")), Search("budget", "Budget", text("budget_id")),
              Search("requested_by", "Requested by", text("requested_by"))),
    dated=REQUESTED, default_sort="requested", identity=by("correction_id"),
    sorts={"requested": by("requested_at_ms"), "budget": by("budget_id"), "requested_by": by("requested_by"),
           **{column: by_amount(column) for column in AMOUNT_COLUMNS}},
    descending_first=frozenset({"requested", *AMOUNT_COLUMNS}))
CorrectionFilter = CORRECTION_LISTING.form_class(CorrectionStatuses)


class RequestForm(CommandForm):
    budget_id = forms.ChoiceField(label="Budget")
    reason = forms.ChoiceField(choices=[(r, r.replace("_", " ")) for r in service.REASONS])
    reverses = forms.CharField(required=False, label="Lines to reverse",
                               help_text="Allocation line IDs of one listener-day, separated by spaces.")
    replacements = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 5, "cols": 70}), label="Replacement lines",
        help_text='A JSON list, e.g. [{"role": "artist", "recipient_id": "...", "work_id": "...", '
                  '"rights_version": 2, "amount": "7500"}]: the work\'s current rights version, split as it splits.')
    remainder_to = forms.ChoiceField(choices=[("unallocated", "back to the budget"), ("refund", "out as a refund")],
                                     label="What is not replaced goes")
    refund_unallocated = forms.RegexField(regex=r"^(0|[1-9][0-9]{0,19})$", initial="0",
                                          label="Also refund unallocated units")

    def __init__(self, *args, budget_ids: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["budget_id"].choices = [(b, b) for b in budget_ids]

    def clean_replacements(self) -> list[dict]:
        text = self.cleaned_data["replacements"].strip()
        try:
            parsed = json.loads(text) if text else []
        except ValueError:
            raise forms.ValidationError("Replacement lines must be a JSON list.") from None
        if not isinstance(parsed, list) or not all(isinstance(item, dict) for item in parsed):
            raise forms.ValidationError("Replacement lines must be a JSON list of objects.")
        return parsed


class ApproveForm(StepUpForm):
    seen_hash = forms.RegexField(regex=SHA256, widget=forms.HiddenInput)


class DeclineForm(CommandForm):
    reason = forms.ChoiceField(choices=[(r, r.replace("_", " ")) for r in service.DECLINE_REASONS])


def correction_list(request):
    filter_form = CorrectionFilter(request.GET or None)
    query, status = filter_form.query(), filter_form.choice("status", "requested")
    read = read_at_boundary(lambda ledger: paginate(
        CORRECTION_LISTING.apply(service.corrections(ledger, status), query), page_number(request)))
    return render_screen(request, "console/corrections.html", CORRECTIONS.title, read, page=read.data,
                         status=status, query=query, filter_form=filter_form,
                         may_request=may_submit(request.user, "RequestCorrection"))


def request_correction(request):
    read = read_at_boundary(service.budget_ids)
    form = RequestForm(request.POST or None, budget_ids=read.data)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = actions.run(request, data["command_id"], "RequestCorrection", lambda: service.request_correction(
                data["command_id"], data["budget_id"], data["reason"], data["reverses"].split(),
                data["replacements"], data["remainder_to"], data["refund_unallocated"]))
        except actions.ActionRefused as error:
            form.add_error(None, str(error))
        else:
            actions.report(request, outcome, "Correction requested; another finance user must decide it")
            if outcome.accepted:
                return redirect(correction_url(service.correction_id_for(data["command_id"])))
            return redirect("admin:console-correction-request")
    return render_screen(request, "console/correction_request.html", "Request a correction", read, form=form)


def correction_detail(request, handle: str):
    correction_id = unseal_id(HANDLE, handle)
    read = read_at_boundary(lambda ledger: service.correction(ledger, correction_id))
    if read.data is None:
        raise Http404("no such correction")
    correction = read.data["correction"]
    return render_screen(request, "console/correction.html", f"Correction {correction_id}", read, **read.data,
                         handle=handle, approve_form=ApproveForm(initial={"seen_hash": correction["request_hash"]}),
                         decline_form=DeclineForm(), blockers=actions.approval_blockers(
                             request, "DecideCorrection", subject="correction", status=correction["status"],
                             awaiting="requested", requested_by=correction["requested_by"], deed="requested"))


@require_POST
def approve(request, handle: str):
    correction_id = unseal_id(HANDLE, handle)
    actions.run_form(request, ApproveForm(request.POST), "DecideCorrection",
                     lambda data: service.approve(correction_id, data["seen_hash"]),
                     done="Correction approved and posted", invalid="Enter the 6-digit code from your authenticator.")
    return redirect(correction_url(correction_id))


@require_POST
def decline(request, handle: str):
    correction_id = unseal_id(HANDLE, handle)
    actions.run_form(request, DeclineForm(request.POST), "DecideCorrection",
                     lambda data: service.decline(owner(), correction_id, data["reason"]),
                     done="Correction declined", invalid="Choose a reason for declining.")
    return redirect(correction_url(correction_id))


def correction_url(correction_id: str) -> str:
    return reverse("admin:console-correction", args=[seal(HANDLE, correction_id)])
