"""Corrections (finance): request a reversal and replacement of allocation lines; another user decides it."""

from __future__ import annotations

from django import forms
from django.http import Http404
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from ledger_engine.amounts import format_amount, parse_amount
from ledger_engine.selectors import correction_queries
from porto_console.console import actions, labels
from porto_console.console.commands import new_command_id
from porto_console.console.forms import CommandForm, StepUpForm
from porto_console.console.handles import seal, unseal_id
from porto_console.console.listing import REQUESTED, Listing, Search, by, by_amount, text
from porto_console.console.paging import page_number, paginate
from porto_console.console.roles import may_submit
from porto_console.console.screens import CORRECTIONS
from porto_console.console.services import corrections as service
from porto_console.console.views.common import render_screen
from porto_console.ledger import read_view

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


class UsdcField(forms.CharField):
    """An amount typed in USDC (``1.25``), cleaned to the ledger's integer minor units exactly."""

    def __init__(self, *, zero: bool = False, **kwargs) -> None:
        self.zero = zero
        super().__init__(widget=forms.TextInput(attrs={"inputmode": "decimal", "size": 12}), **kwargs)

    def clean(self, value):
        text = super().clean(value)
        if text in self.empty_values:
            return 0 if self.zero else text
        try:
            return service.minor_units(text, zero=self.zero)
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None


class ChooseForm(forms.Form):
    """Step one: the budget, then one of its listener-days with lines to reverse."""

    budget = forms.ChoiceField(label="Budget", required=False)
    listener_day = forms.ChoiceField(label="Listener-day", required=False)

    def __init__(self, *args, choices: service.Choices, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["budget"].choices = [("", "Choose a budget")] + [(b, b) for b in choices.budget_ids]
        self.fields["listener_day"].choices = [("", "Choose a listener-day")] + [
            (listener_day_value(listener, day), f"{listener}, {labels.day_date(day):%d %b %Y} (UTC)")
            for listener, day in choices.days]


class ReplacementRow(forms.Form):
    role = forms.ChoiceField(choices=[("artist", "Artist"), ("operator", "Operator")], initial="artist")
    recipient_id = forms.ChoiceField(label="Recipient")
    work_id = forms.ChoiceField(label="Work", required=False)
    rights_version = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)
    node_id = forms.ChoiceField(label="Node", required=False)
    amount = UsdcField(label="Amount (USDC)")

    def __init__(self, *args, choices: service.Choices, fill_versions: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.works, self.fill_versions = choices.works, fill_versions
        self.fields["recipient_id"].choices = [("", "Choose")] + [(r, r) for r in choices.recipient_ids]
        self.fields["work_id"].choices = [("", "None (operator)")] + [
            (work.work_id, f"{work.work_id} (rights version {work.rights_version})") for work in choices.works.values()]
        self.fields["node_id"].choices = [("", "None (artist)")] + [
            (node, f"{node} (operated by {operator})") for node, operator in choices.nodes.items()]

    def clean(self):
        data = super().clean()
        if data.get("role") == "artist":
            if not data.get("work_id"):
                self.add_error("work_id", "An artist row names the work.")
            elif self.fill_versions:
                data["rights_version"] = self.works[data["work_id"]].rights_version
            elif not data.get("rights_version"):
                self.add_error("work_id", "Review the rows again: the work's rights version is missing.")
        elif data.get("role") == "operator" and not data.get("node_id"):
            self.add_error("node_id", "An operator row names the node.")
        return data


ReplacementRows = forms.formset_factory(ReplacementRow, extra=1, max_num=service.MAX_LINES, validate_max=True)


class RequestForm(CommandForm):
    """Steps two to four: the lines to reverse, replacement rows, where the rest goes, then review."""

    budget_id = forms.CharField(widget=forms.HiddenInput)
    listener_day = forms.CharField(widget=forms.HiddenInput)
    reverses = forms.MultipleChoiceField(required=False, label="Lines to reverse", widget=forms.MultipleHiddenInput)
    reason = forms.ChoiceField(choices=[(r, r.replace("_", " ")) for r in service.REASONS])
    remainder_to = forms.ChoiceField(label="What is not replaced goes", widget=forms.RadioSelect)
    refund_unallocated = UsdcField(zero=True, required=False, initial="0",
                                   label="Also refund from the budget's unallocated (USDC)")
    split_work = forms.ChoiceField(required=False, label="Work")
    split_total = forms.CharField(required=False, label="Total to split (USDC)",
                                  widget=forms.TextInput(attrs={"inputmode": "decimal", "size": 12}))

    def __init__(self, *args, choices: service.Choices, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.choices = choices
        self.fields["reverses"].choices = [(c.line["line_id"], c.line["line_id"]) for c in choices.lines]
        self.fields["remainder_to"].choices = service.remainder_choices(choices.refunded)
        self.fields["remainder_to"].initial = "refund"
        self.fields["split_work"].choices = [("", "Choose a work")] + [
            (work.work_id, f"{work.work_id} (rights version {work.rights_version})") for work in choices.works.values()]

    def clean_reverses(self) -> list[str]:
        for line_id in self.cleaned_data["reverses"]:
            why_not = self.choices.line(line_id).why_not
            if why_not:
                raise forms.ValidationError(f"Line {line_id} can no longer be reversed: it is {why_not}.")
        return self.cleaned_data["reverses"]

    def reversed_total(self) -> int:
        return sum(parse_amount(self.choices.line(line_id).line["amount"]) for line_id in self.cleaned_data["reverses"])


class ApproveForm(StepUpForm):
    seen_hash = forms.RegexField(regex=SHA256, widget=forms.HiddenInput)


class DeclineForm(CommandForm):
    reason = forms.ChoiceField(choices=[(r, r.replace("_", " ")) for r in service.DECLINE_REASONS])


def correction_list(request):
    filter_form = CorrectionFilter(request.GET or None)
    query, status = filter_form.query(), filter_form.choice("status", "requested")
    read = read_view(lambda view: paginate(
        CORRECTION_LISTING.apply(correction_queries.corrections(view, status), query), page_number(request)))
    return render_screen(request, "console/corrections.html", CORRECTIONS.title, read, page=read.data,
                         status=status, query=query, filter_form=filter_form,
                         may_request=may_submit(request.user, "RequestCorrection"))


def request_correction(request):
    """Choose a budget's listener-day and its lines, enter replacement rows in USDC, review, then submit."""
    source = request.POST if request.method == "POST" else request.GET
    budget_id, listener_day = source.get("budget_id") or source.get("budget"), parse_listener_day(source)
    read = read_view(lambda view: service.choices(view, budget_id, listener_day))
    choices, action = read.data, request.POST.get("action")
    if request.method != "POST" or not choices.lines:
        form = RequestForm(choices=choices, initial={"budget_id": budget_id,
                                                     "listener_day": source.get("listener_day")})
        return _edit_page(request, read, form, _rows(choices, None, fill_versions=True))
    if action == "split":
        return _split(request, read)
    data = request.POST.copy()
    if action == "submit":
        data["command_id"] = new_command_id()  # what the page shows again, if the ledger refuses this one
    form, rows = RequestForm(data, choices=choices), _rows(choices, data, fill_versions=action != "submit")
    if not (form.is_valid() and rows.is_valid()) or not _replaces_at_most_reversed(form, rows):
        return _edit_page(request, read, form, rows)
    if action == "submit":
        return _submit(request, read, form, rows)
    if action == "review":
        return _review_page(request, read, form, rows)
    return _edit_page(request, read, form, rows)


def parse_listener_day(source) -> tuple[str, int] | None:
    """The form's ``<day> <listener ID>`` (a space never appears in an identifier)."""
    day, _, listener_id = (source.get("listener_day") or "").partition(" ")
    return (listener_id, int(day)) if listener_id and day.isdigit() else None


def listener_day_value(listener_id: str, day: int) -> str:
    return f"{day} {listener_id}"


def _rows(choices: service.Choices, data, *, fill_versions: bool, initial: list[dict] | None = None):
    return ReplacementRows(data, prefix="rows", initial=initial,
                           form_kwargs={"choices": choices, "fill_versions": fill_versions})


def _filled(rows) -> list[dict]:
    return [row.cleaned_data for row in rows.forms if row.has_changed() and row.cleaned_data]


def _replaces_at_most_reversed(form: RequestForm, rows) -> bool:
    replaced, reversed_total = sum(row["amount"] for row in _filled(rows)), form.reversed_total()
    if replaced > reversed_total:
        form.add_error(None, f"The replacement rows total {service.usdc(replaced)}, more than the "
                             f"{service.usdc(reversed_total)} of the lines you reverse: lower their amounts.")
    return replaced <= reversed_total


def _split(request, read):
    """The split helper: artist rows for one work's total, split as its current rights version splits."""
    choices, data = read.data, request.POST.copy()
    form = RequestForm(data, choices=choices)
    work = choices.works.get(data.get("split_work", ""))
    try:
        total = service.minor_units(data.get("split_total", ""))
    except ValueError as error:
        form.add_error("split_total", str(error))
        return _edit_page(request, read, form, _rows(choices, data, fill_versions=True))
    if work is None:
        form.add_error("split_work", "Choose the work whose total to split.")
        return _edit_page(request, read, form, _rows(choices, data, fill_versions=True))
    return _edit_page(request, read, form, _rows(choices, None, fill_versions=True,
                                                 initial=service.split_rows(work, total)))


def _submit(request, read, form: RequestForm, rows):
    data, replacements = form.cleaned_data, [service.replacement(row) for row in _filled(rows)]
    command_id = request.POST["command_id"]  # the reviewed form's, so a repeated submit gets the same answer
    try:
        outcome = actions.run(request, command_id, "RequestCorrection", lambda: service.request_correction(
            command_id, data["budget_id"], data["reason"], data["reverses"], replacements, data["remainder_to"],
            format_amount(data["refund_unallocated"])))
    except actions.ActionRefused as error:
        if error.code is None:
            form.add_error(None, str(error))
        else:
            _show(form, rows, service.in_words(error.code, error.detail, _filled(rows), read.data.works))
        return _edit_page(request, read, form, rows)
    if not outcome.accepted:
        _show(form, rows, service.in_words(outcome.code, outcome.result.get("detail", ""), _filled(rows),
                                           read.data.works))
        return _edit_page(request, read, form, rows)
    actions.report(request, outcome, "Correction requested; another finance user must decide it")
    return redirect(correction_url(service.correction_id_for(command_id)))


def _show(form: RequestForm, rows, problem: service.Problem) -> None:
    """A refusal beside what it concerns: a row's field, a field of the form, or the form as a whole."""
    filled = [row for row in rows.forms if row.has_changed() and row.cleaned_data]
    if problem.row is not None and problem.row < len(filled):
        filled[problem.row].add_error(problem.field, problem.message)
    elif problem.field in form.fields:
        form.add_error(problem.field, problem.message)
    else:
        form.add_error(None, problem.message)


def _edit_page(request, read, form: RequestForm, rows):
    choices = read.data
    chosen = set(form.data.getlist("reverses")) if form.is_bound else set()
    return render_screen(request, "console/correction_request.html", "Request a correction", read,
                         choose_form=ChooseForm(initial={"budget": form["budget_id"].value(),
                                                         "listener_day": form["listener_day"].value()},
                                                choices=choices),
                         form=form, rows=rows, lines=choices.lines, chosen=chosen, refunded=choices.refunded,
                         works=choices.works.values())


def _review_page(request, read, form: RequestForm, rows):
    """Step four: what the ledger will freeze, in USDC, with the reviewed rows carried to the submit."""
    data, filled = form.cleaned_data, _filled(rows)
    carried = request.POST.copy()
    for number, row in enumerate(rows.forms):
        if row.has_changed() and row.cleaned_data.get("rights_version"):
            carried[f"rows-{number}-rights_version"] = str(row.cleaned_data["rights_version"])
    reversed_total = form.reversed_total()
    replaced = sum(row["amount"] for row in filled)
    return render_screen(request, "console/correction_request_review.html", "Review the correction", read,
                         carried=[(name, value) for name in carried if name not in ("action", "csrfmiddlewaretoken")
                                  for value in carried.getlist(name)],
                         data=data, lines=[read.data.line(line_id) for line_id in data["reverses"]], rows=filled,
                         reversed_total=reversed_total, replaced=replaced, remainder=reversed_total - replaced,
                         remainder_to=dict(service.REMAINDER_TO)[data["remainder_to"]])


def correction_detail(request, handle: str):
    correction_id = unseal_id(HANDLE, handle)
    read = read_view(lambda view: service.correction(view, correction_id))
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
                     lambda data: read_view(lambda view: service.decline(view, correction_id, data["reason"])).data,
                     done="Correction declined", invalid="Choose a reason for declining.")
    return redirect(correction_url(correction_id))


def correction_url(correction_id: str) -> str:
    return reverse("admin:console-correction", args=[seal(HANDLE, correction_id)])
