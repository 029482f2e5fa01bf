"""Holds (ops): the open queue by age and reason, a hold with its session's evidence, decisions one by one or in bulk."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from ledger_engine.domain.commands.money.budgets import BUDGET_ASSET
from ledger_engine.domain.commands.streaming.holds import REASONS_BY_DECISION, reason_fits
from ledger_engine.selectors import listing_queries, streaming_queries
from ledger_engine.selectors.streaming_queries import HoldDetail
from porto_console.console import actions, exports
from porto_console.console.forms import CommandForm, ReasonField, accept_posted_choices
from porto_console.console.handles import seal, unseal_id
from porto_console.console.listing import DateRange, Listing, Search, by, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.labels import human
from porto_console.console.roles import may_submit
from porto_console.console.screens import HOLDS
from porto_console.console.services import holds as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_view

HANDLE = "hold"


class HoldReasons(forms.Form):
    reason = forms.ChoiceField(choices=[("", "any reason"), *((r, r.replace("_", " ")) for r in service.HOLD_REASONS)],
                               required=False)


HOLD_LISTING = Listing(
    searches=(Search("hold", "Hold ID", text("hold_id")), Search("listener", "Listener", text("listener_id")),
              Search("node", "Node", text("node_id"))),
    dated=DateRange("raised", "Raised from", by("raised_at_ms")),
    sorts={"raised": by("raised_at_ms"), "stake": by("at_stake"), "listener": by("listener_id"), "day": by("day"),
           "node": by("node_id")},
    default_sort="raised", identity=by("hold_id"), descending_first=frozenset({"day", "stake"}))
HoldFilter = HOLD_LISTING.form_class(HoldReasons)


class DecisionForm(CommandForm):
    """A decision and a reason from that decision's own group: the ledger refuses any other pairing too."""

    decision = forms.ChoiceField(choices=[(d, d) for d in service.DECISIONS], widget=forms.RadioSelect)
    reason = forms.ChoiceField(choices=[(f"{decision.capitalize()} because", [(r, human(r)) for r in reasons])
                                        for decision, reasons in REASONS_BY_DECISION.items()])

    def clean(self) -> dict:
        data = super().clean()
        decision, reason = data.get("decision"), data.get("reason")
        if decision and reason and not reason_fits(decision, reason):
            raise forms.ValidationError(f"{service.MISMATCH}: {human(reason)} is not a reason to {decision} a hold.",
                                        code=service.MISMATCH)
        return data


class DecideForm(DecisionForm):
    note = ReasonField(required=False, label="Note (kept as private evidence)")
    revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)  # a rejection is asked about first


class BulkForm(DecisionForm):
    hold_reason = forms.ChoiceField(choices=[(r, r) for r in service.HOLD_REASONS], widget=forms.HiddenInput)
    holds = forms.MultipleChoiceField(choices=[], required=True)
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        accept_posted_choices(self, "holds")


def hold_queue(request):
    filter_form = HoldFilter(request.GET or None)
    query, reason = filter_form.query(), filter_form.choice("reason", "")
    if exports.wanted(request):
        found = read_view(lambda view: HOLD_LISTING.apply(_open_holds(view, reason), query)).data
        return exports.listed("holds", exports.HOLD_HEADER, exports.hold_cells(BUDGET_ASSET), found, query)
    read = read_view(lambda view: (
        paginate(HOLD_LISTING.apply(_open_holds(view, reason), query), page_number(request)),
        streaming_queries.open_hold_counts(view)))
    page, counts = read.data
    return render_screen(request, "console/holds.html", HOLDS.title, read, holds=page.items, page=page,
                         counts=counts, reason=reason, query=query, filter_form=filter_form,
                         bulk_form=BulkForm(initial={"hold_reason": reason}) if reason else None,
                         may_decide=may_submit(request.user, "DecideHold"))


def _open_holds(view, reason: str):
    """The open queue, oldest first, of every reason or of ``reason``; the screen searches, sorts and pages it."""
    return listing_queries.every_open_hold(view, reason=reason or None)


def hold_detail(request, handle: str):
    hold_id = unseal_id(HANDLE, handle)
    read = read_view(lambda view: streaming_queries.hold_detail(view, hold_id))
    if read.data is None:
        raise Http404("no such hold")
    form = DecideForm(request.POST or None, initial={"revision": read.data["revision"]})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        if data["decision"] == "reject" and not data["confirmed"]:
            return render_screen(request, "console/hold_reject_confirm.html", f"Reject hold {hold_id}?", read,
                                 form=DecideForm(initial={**data, "confirmed": True}), reason=data["reason"],
                                 **read.data)
        try:
            outcome = actions.run(request, data["command_id"], "DecideHold", lambda: service.decide(
                hold_id, data["decision"], data["reason"], data["revision"], data["note"]))
        except actions.ActionRefused as error:  # shown whether or not the hold is still open to decide
            messages.error(request, str(error))
        else:
            actions.report(request, outcome, f"Hold {service.DECISIONS[data['decision']]}")
            return redirect(hold_url(hold_id))
    return render_screen(request, "console/hold_detail.html", f"Hold {hold_id}", read, form=form, **read.data,
                         may_decide=may_submit(request.user, "DecideHold"))


@require_POST
def hold_bulk(request):
    """Decide many holds of one reason: a separate command for each, reported together."""
    form = BulkForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(form.non_field_errors()) or "Choose holds, a decision and a reason.")
        return redirect(queue_url())
    data = form.cleaned_data
    if not data["confirmed"]:
        return _confirm_bulk(request, data)
    done, refused = 0, []
    for hold_id in data["holds"]:
        try:
            outcome = actions.run(request, service.bulk_command_id(data["command_id"], hold_id), "DecideHold",
                                  lambda: _bulk_decision(hold_id, data))
        except actions.ActionRefused as error:
            refused.append(f"{hold_id}: {error}")
            continue
        if outcome.accepted:
            done += 1
        else:
            refused.append(f"{hold_id}: {outcome.code} {outcome.result.get('detail', '')}")
    messages.success(request, f"{done} of {len(data['holds'])} holds {service.DECISIONS[data['decision']]}, "
                              "one command each.")
    for line in refused:
        messages.error(request, f"Not allowed: {line}")
    return redirect(f"{queue_url()}?reason={data['hold_reason']}")


def _confirm_bulk(request, data: dict):
    """Each ticked hold with what will happen to it, or why it will be refused; nothing is submitted yet."""
    read = read_view(lambda view: [(hold_id, streaming_queries.hold_detail(view, hold_id))
                                   for hold_id in data["holds"]])
    plan = [{"hold_id": hold_id, "hold": found["hold"] if found else None,
             "refusal": _bulk_refusal(found, data["hold_reason"])} for hold_id, found in read.data]
    confirm = BulkForm(initial={**data, "confirmed": True})
    outcome = service.DECISIONS[data["decision"]]
    return render_screen(request, "console/holds_bulk_confirm.html", f"{outcome.capitalize()} {len(plan)} holds?",
                         read, plan=plan, form=confirm, decision=data["decision"], reason=data["reason"],
                         hold_reason=data["hold_reason"], outcome=outcome,
                         deciding=sum(1 for item in plan if not item["refusal"]))


def _bulk_refusal(found: HoldDetail | None, hold_reason: str) -> str:
    if found is None:
        return "no such hold"
    if found["hold"]["status"] != "open":
        return f"already {found['hold']['status']}"
    if hold_reason not in found["hold"]["reasons"]:
        return f"not one of the {human(hold_reason).lower()} holds"
    return ""


def _bulk_decision(hold_id: str, data: dict):
    """The hold must still carry the bulk form's reason; the decision is taken on its current revision."""
    hold = read_view(lambda view: streaming_queries.hold_detail(view, hold_id)).data
    if hold is None or data["hold_reason"] not in hold["hold"]["reasons"]:
        raise actions.ActionRefused(f"the hold is not one of the {data['hold_reason']} holds")
    return service.decide(hold_id, data["decision"], data["reason"], hold["revision"])


def queue_url() -> str:
    return reverse(f"admin:{HOLDS.url_name}")


def hold_url(hold_id: str) -> str:
    return reverse("admin:console-hold", args=[seal(HANDLE, hold_id)])
