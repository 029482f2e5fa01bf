"""Recipient updates (finance): request a new payout address with ownership evidence, compare, approve or decline."""

from __future__ import annotations

from django import forms
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from ledger_engine.selectors import payout_queries
from porto_console.console import actions
from porto_console.console.forms import CommandForm, StepUpForm
from porto_console.console.handles import seal, unseal_ids
from porto_console.console.listing import REQUESTED, Listing, Search, by, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import may_submit
from porto_console.console.screens import RECIPIENTS
from porto_console.console.services import recipients as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_view

HANDLE = "recipient-update"


class UpdateStatuses(forms.Form):
    status = forms.ChoiceField(choices=[(s, s) for s in service.UPDATE_STATUSES], required=False)


UPDATE_LISTING = Listing(
    searches=(Search("recipient", "Recipient ID", text("recipient_id")),
              Search("address", "Address", lambda row: (row.old_address or "", row.payout_address)),
              Search("requested_by", "Requested by", text("requested_by"))),
    dated=REQUESTED,
    sorts={"requested": by("requested_at_ms"), "recipient": by("recipient_id"), "version": by("version"),
           "requested_by": by("requested_by")},
    default_sort="requested", identity=by("update_id"), descending_first=frozenset({"requested", "version"}))
UpdateFilter = UPDATE_LISTING.form_class(UpdateStatuses)


class RequestForm(CommandForm):
    recipient_id = forms.ChoiceField(label="Recipient")
    payout_address = forms.RegexField(regex=r"^0x[0-9a-f]{64}$", label="New payout address",
                                      help_text="0x and 64 lowercase hex digits.")
    evidence = forms.CharField(widget=forms.Textarea(attrs={"rows": 4, "cols": 70}), max_length=20_000,
                               label="Ownership evidence",
                               help_text="For example a message signed by the new address; stored as private evidence.")

    def __init__(self, *args, recipient_ids: list[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["recipient_id"].choices = [(r, r) for r in recipient_ids]


class DeclineForm(CommandForm):
    reason = forms.ChoiceField(choices=[(r, r.replace("_", " ")) for r in service.DECLINE_REASONS])


def update_list(request):
    filter_form = UpdateFilter(request.GET or None)
    query, status = filter_form.query(), filter_form.choice("status", "pending")
    read = read_view(lambda view: paginate(UPDATE_LISTING.apply(payout_queries.recipient_updates(view, status), query),
                                           page_number(request)))
    return render_screen(request, "console/recipient_updates.html", RECIPIENTS.title, read, page=read.data,
                         status=status, query=query, filter_form=filter_form,
                         may_request=may_submit(request.user, "UpdateRecipient"))


def request_update(request):
    read = read_view(service.recipient_ids)
    form = RequestForm(request.POST or None, recipient_ids=read.data)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            outcome = actions.run(request, data["command_id"], "UpdateRecipient", lambda: read_view(
                lambda view: service.request_update(view, data["command_id"], data["recipient_id"],
                                                    data["payout_address"], data["evidence"])).data)
        except actions.ActionRefused as error:
            form.add_error(None, str(error))
        else:
            actions.report(request, outcome, "Address change requested; another finance user must approve it")
            if outcome.accepted:
                return redirect(update_url(data["recipient_id"], service.update_id_for(data["command_id"])))
            return redirect("admin:console-recipient-request")
    return render_screen(request, "console/recipient_request.html", "Request a payout address change", read,
                         form=form)


def update_detail(request, handle: str):
    recipient_id, update_id = unseal_ids(HANDLE, handle, 2)
    read = read_view(lambda view: service.update(view, recipient_id, update_id))
    if read.data is None:
        raise Http404("no such recipient update")
    return render_screen(request, "console/recipient_update.html", f"Address change for {recipient_id}", read,
                         **read.data, handle=handle, approve_form=StepUpForm(), decline_form=DeclineForm(),
                         blockers=_blockers(request, read.data["update"]))


def _blockers(request, update: dict) -> list[str]:
    return actions.approval_blockers(request, "UpdateRecipient", subject="change", status=update["status"],
                                     awaiting="pending", requested_by=update["requested_by"], deed="requested")


@require_POST
def approve(request, handle: str):
    recipient_id, update_id = unseal_ids(HANDLE, handle, 2)
    actions.run_form(request, StepUpForm(request.POST), "UpdateRecipient",
                     lambda data: read_view(lambda view: service.approve(view, recipient_id, update_id)).data,
                     done="Address change approved",
                     invalid="Enter the 6-digit code from your authenticator.")
    return redirect(update_url(recipient_id, update_id))


@require_POST
def decline(request, handle: str):
    recipient_id, update_id = unseal_ids(HANDLE, handle, 2)
    actions.run_form(request, DeclineForm(request.POST), "UpdateRecipient",
                     lambda data: read_view(
                         lambda view: service.decline(view, recipient_id, update_id, data["reason"])).data,
                     done="Address change declined", invalid="Choose a reason for declining.")
    return redirect(update_url(recipient_id, update_id))


def update_url(recipient_id: str, update_id: str) -> str:
    return reverse("admin:console-recipient-update", args=[seal(HANDLE, f"{recipient_id}/{update_id}")])
