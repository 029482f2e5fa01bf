"""Payout runs (finance): prepare from unpaid allocations, review the frozen run, approve, cancel, follow payments."""

from __future__ import annotations

from typing import get_args

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from ledger_engine.domain.commands.money.payout_runs import CancelReason
from ledger_engine.errors import LedgerError
from ledger_engine.selectors import account_queries, payout_queries
from ledger_engine.selectors.payout_queries import Payable
from ledger_engine.selectors.view import LedgerView
from porto_console.console import actions, exports, stepup
from porto_console.console.forms import CommandForm, ReasonField, StepUpForm, accept_posted_choices
from porto_console.console.handles import seal, unseal_id
from porto_console.console.listing import DateRange, Listing, Search, by, by_amount, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import may_submit, require_command
from porto_console.console.screens import PAYMENTS, PAYOUTS
from porto_console.console.services import payment_search as search
from porto_console.console.services import payouts as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_view

HANDLE = "run"
SHA256 = r"^[0-9a-f]{64}$"


class RunStatuses(forms.Form):
    status = forms.ChoiceField(choices=[(service.OPEN, "prepared or approved"), *((s, s) for s in service.RUN_STATUSES),
                                        (service.ALL, "all")], required=False)


RUN_LISTING = Listing(
    searches=(Search("run", "Run ID", text("run_id")), Search("prepared_by", "Prepared by", text("prepared_by")),
              Search("run_hash", "Run hash", text("run_hash"))),
    dated=DateRange("prepared", "Prepared from", by("prepared_at_ms")),
    sorts={"prepared": by("prepared_at_ms"), "total": by_amount("total"), "payments": by("payments"),
           "status": by("status"), "prepared_by": by("prepared_by"), "run": by("run_id")},
    default_sort="prepared", identity=by("run_id"), descending_first=frozenset({"prepared", "total", "payments"}))
RunFilter = RUN_LISTING.form_class(RunStatuses)


class PaymentStates(forms.Form):
    state = forms.ChoiceField(choices=[(search.ANY_STATE, "any state"), *((s, s) for s in service.PAYMENT_STATES)],
                              required=False)


PaymentFilter = search.LISTING.form_class(PaymentStates)


class PrepareForm(CommandForm):
    recipients = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple)
    seen_payables = forms.RegexField(regex=SHA256, widget=forms.HiddenInput)  # what the preparer was shown

    def __init__(self, *args, payables: list[Payable], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["recipients"].choices = [(payable.recipient_id, payable.recipient_id) for payable in payables]
        accept_posted_choices(self, "recipients")


class ApproveForm(StepUpForm):
    seen_hash = forms.RegexField(regex=SHA256, widget=forms.HiddenInput)


class CancelForm(CommandForm):
    reason = forms.ChoiceField(choices=[(reason, reason.replace("_", " ")) for reason in get_args(CancelReason)])
    note = ReasonField(required=False, label="Note (kept as private evidence)")
    revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)


def run_list(request):
    filter_form = RunFilter(request.GET or None, initial={"status": service.OPEN})
    query, status = filter_form.query(), filter_form.choice("status", service.OPEN)
    if exports.wanted(request):
        runs = read_view(lambda view: RUN_LISTING.apply(service.runs_in(view, status), query)).data
        return exports.listed("payout-runs", exports.RUN_HEADER, exports.run_cells(service.ASSET), runs, query)
    read = read_view(lambda view: service.with_aggregates(
        view, paginate(RUN_LISTING.apply(service.runs_in(view, status), query), page_number(request))))
    return render_screen(request, "console/payout_runs.html", PAYOUTS.title, read, page=read.data, status=status,
                         query=query, filter_form=filter_form,
                         may_prepare=may_submit(request.user, "PreparePayoutRun"))


def payment_list(request):
    filter_form = PaymentFilter(request.GET or None, initial={"state": search.DEFAULT_STATE})
    query, state = filter_form.query(), filter_form.choice("state", search.DEFAULT_STATE)
    if exports.wanted(request):
        found, names = read_view(lambda view: search.found_and_names(view, state, query)).data
        return exports.listed("payments", exports.PAYMENT_HEADER, exports.payment_cells(names.get), found, query)
    read = read_view(lambda view: search.found_and_queue(view, state, query))
    found, reconciliation = read.data
    page = paginate(found, page_number(request))
    return render_screen(request, "console/payments.html", PAYMENTS.title, read, page=page, query=query,
                         state=state, filter_form=filter_form, reconciliation=reconciliation)


def prepare(request):
    """The payables now, each recipient ticked unless approval could not cite a confirmed statement for it."""
    read = read_view(_payables_and_names)
    payables, names = read.data
    if request.method == "GET" and exports.wanted(request):
        return exports.table(exports.PAYABLE_HEADER, exports.payable_cells(service.ASSET, names.get), payables,
                             exports.filename("payables", at=f"at-sequence-{read.head.sequence}"))
    form = PrepareForm(request.POST or None, payables=payables)
    if request.method == "POST":
        if not form.is_valid():
            messages.error(request, "Choose at least one recipient to pay.")
            return redirect("admin:console-payout-prepare")
        data = form.cleaned_data
        try:
            outcome = actions.run(request, data["command_id"], "PreparePayoutRun", lambda: service.prepare(
                read_view(payout_queries.payables).data, data["command_id"], data["recipients"], data["seen_payables"]))
        except (actions.ActionRefused, service.PlanChanged) as error:
            messages.error(request, str(error))
            return redirect("admin:console-payout-prepare")
        actions.report(request, outcome, "Payout run prepared; another finance user must approve it")
        if not outcome.accepted:
            return redirect("admin:console-payout-prepare")
        return redirect(run_url(service.run_id_for(data["command_id"])))
    form = PrepareForm(payables=payables, initial={
        "recipients": [payable.recipient_id for payable in payables if payable.statement_id and not payable.waiting_run],
        "seen_payables": service.payables_digest(payables)})
    return render_screen(request, "console/payout_prepare.html", "Prepare a payout run", read, form=form,
                         payables_with_boxes=list(zip(payables, form["recipients"], statement_file_urls(payables),
                                                      [run_url(p.waiting_run) if p.waiting_run else None
                                                       for p in payables])),
                         payables=payables,
                         total=service.total(payables), asset=service.ASSET)


def _payables_and_names(view: LedgerView) -> tuple[list[Payable], dict[str, str]]:
    """The payables now, and the display names of their recipients."""
    payables = payout_queries.payables(view)
    return payables, account_queries.display_names(view, {payable.recipient_id for payable in payables})


def run_detail(request, handle: str):
    run_id = unseal_id(HANDLE, handle)
    try:
        read = read_view(lambda view: _run_view(view, run_id))
    except LedgerError:
        raise Http404("no such payout run") from None
    run = read.data["run"]
    return render_screen(request, "console/payout_run.html", f"Payout run {run_id}", read, **read.data,
                         approve_form=ApproveForm(initial={"seen_hash": run["run_hash"]}),
                         cancel_form=CancelForm(initial={"revision": read.data["revision"]}),
                         cancel_note=service.cancel_note(run),
                         approve_blockers=_approve_blockers(request, read.data),
                         cancel_blockers=_cancel_blockers(request, run))


def _run_view(view: LedgerView, run_id: str) -> dict:
    run = payout_queries.run_detail(view, run_id)
    statements = payout_queries.run_statements(view, run_id)
    for payment in run["payments"]:  # what finance can send each recipient again, before or after approval
        statement = statements.get(payment["recipient_id"])
        payment["statement_file"] = statement_file_url(statement) if statement else None
    uncovered = payout_queries.covering_statements(view, run_id).uncovered
    return {"run": run, "revision": payout_queries.run_revision(view, run_id),
            "missing_statements": [f"{recipient_id}: {line_id}" for recipient_id, line_id in uncovered],
            "unpayable": payout_queries.unpayable_lines(view, run_id)}


def _approve_blockers(request, view: dict) -> list[str]:
    run = view["run"]
    blockers = actions.approval_blockers(request, "ApprovePayoutRun", subject="run", status=run["status"],
                                         awaiting="prepared", requested_by=run["prepared_by"], deed="prepared")
    if view["unpayable"]:
        blockers.append(unpayable_blocker(view["unpayable"]))
    if view["missing_statements"]:
        blockers.append("No confirmed statement frozen after these lines yet: " + ", ".join(view["missing_statements"]) + ".")
    if not stepup.has_device(request.user):
        blockers.append("Approving needs an authenticator code, and you have no authenticator enrolled.")
    return blockers


def _cancel_blockers(request, run: dict) -> list[str]:
    blockers = []
    if not may_submit(request.user, "CancelPayoutRun"):
        blockers.append("Cancelling needs the finance role.")
    if run["status"] not in ("prepared", "approved"):
        blockers.append(f"The run is {run['status']}.")
    return blockers


def unpayable_blocker(unpayable: list[dict]) -> str:
    lines = ", ".join(f"{line['recipient_id']}'s {line['line_id']} ({line['status']})" for line in unpayable)
    return (f"This run can never be approved: some of its lines are no longer payable ({lines}), most often because "
            "another run over them was approved first. Cancel it, and prepare a new run if anything is still owed.")


@require_POST
def approve(request, handle: str):
    run_id = unseal_id(HANDLE, handle)
    unpayable = read_view(lambda view: payout_queries.unpayable_lines(view, run_id)).data
    if unpayable:  # refused before the code is checked: the approver keeps it, and nothing is journalled
        messages.error(request, unpayable_blocker(unpayable))
        return redirect(run_url(run_id))
    actions.run_form(request, ApproveForm(request.POST), "ApprovePayoutRun", lambda data: service.approve(
        run_id, data["seen_hash"], read_view(lambda view: payout_queries.approval_citations(view, run_id)).data),
        done="Payout run approved; its payments are queued for signing",
        invalid="Enter the 6-digit code from your authenticator.")
    return redirect(run_url(run_id))


@require_POST
def cancel(request, handle: str):
    """First a page saying what cancelling will do; the command is submitted only from that page."""
    run_id = unseal_id(HANDLE, handle)
    require_command(request, "CancelPayoutRun")
    form = CancelForm(request.POST)
    if form.is_valid() and not form.cleaned_data["confirmed"]:
        return _confirm_cancel(request, run_id, form)
    actions.run_form(request, form, "CancelPayoutRun",
                     lambda data: service.cancel(run_id, data["reason"], data["revision"], data["note"]),
                     done="Payout run cancelled", invalid="Choose a reason for cancelling.")
    return redirect(run_url(run_id))


def statement_file_urls(payables) -> list[str | None]:
    return [statement_file_url(payable.statement_id) if payable.statement_id else None for payable in payables]


def statement_file_url(statement_id: str) -> str:
    return reverse("admin:console-statement-file", args=[seal("statement", statement_id)])


def _confirm_cancel(request, run_id: str, form: CancelForm):
    try:
        read = read_view(lambda view: payout_queries.run_detail(view, run_id))
    except LedgerError:
        raise Http404("no such payout run") from None
    run = read.data
    confirm = CancelForm(initial={**form.cleaned_data, "confirmed": True})
    return render_screen(request, "console/payout_cancel_confirm.html", f"Cancel payout run {run_id}?", read,
                         run=run, form=confirm, reason=form.cleaned_data["reason"], note=form.cleaned_data["note"],
                         cancelled=[p for p in run["payments"] if p["state"] in service.UNSIGNED_STATES],
                         kept=[p for p in run["payments"] if p["state"] not in service.UNSIGNED_STATES])


def run_url(run_id: str) -> str:
    return reverse("admin:console-payout-run", args=[seal(HANDLE, run_id)])
