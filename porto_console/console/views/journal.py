"""Journal explorer (auditor): entries by sequence or command ID, chain checks and audited exports."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from ledger_engine.domain.registry import registered_types
from ledger_engine.envelope import UUID_PATTERN
from porto_console.console import actions, exports
from porto_console.console.commands import CommandRequest
from porto_console.console.forms import CommandForm
from porto_console.console.listing import DateRange, Listing, by
from porto_console.console.screens import JOURNAL
from porto_console.console.services import journal as service
from porto_console.console.views import accounting
from porto_console.console.views.common import render_screen
from porto_console.ledger import owner, read_settled, read_view

EXPORT_COMMAND = "RecordExportAccess"
EXPORT_TYPES = {"json": ("application/x-ndjson", "jsonl"), "csv": ("text/csv", "csv")}


class JournalFilters(forms.Form):
    command_type = forms.ChoiceField(required=False)
    outcome = forms.ChoiceField(choices=[("", "any outcome"), ("accepted", "accepted"), ("rejected", "rejected")],
                                required=False)
    actor = forms.CharField(max_length=200, required=False, label="Actor")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["command_type"].choices = [("", "any command"), *((t, t) for t in registered_types())]


# Only the sequence sorts: admission time follows it (docs/adr/0012), and any other order would read the whole
# journal per request (docs/adr/0059).
JOURNAL_LISTING = Listing(
    searches=(), sorts={"sequence": by("sequence")}, default_sort="sequence", identity=by("sequence"),
    dated=DateRange("admitted", "Admitted from", by("admitted_at_ms")), descending_first=frozenset({"sequence"}))
JournalFilter = JOURNAL_LISTING.form_class(JournalFilters)


class CsvExportForm(CommandForm, JournalFilter):  # type: ignore[misc,valid-type]  # the listing builds its base
    """The journal screen's filters, carried to an export of every entry they select."""


class LookupForm(forms.Form):
    command_id = forms.RegexField(regex=f"^{UUID_PATTERN}$", label="Command ID")


class RangeForm(forms.Form):
    first = forms.IntegerField(min_value=1, label="From sequence")
    last = forms.IntegerField(min_value=1, label="To sequence")

    def __init__(self, *args, head: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.head = head

    def clean(self):
        data = super().clean()
        first, last = data.get("first"), data.get("last")
        if first is not None and last is not None:
            if not first <= last <= self.head:
                raise forms.ValidationError(f"Choose a range within 1 to {self.head}, first to last.")
            if last - first >= service.MAX_RANGE:
                raise forms.ValidationError(f"A range covers at most {service.MAX_RANGE} entries.")
        return data


class ExportForm(CommandForm, RangeForm):
    file_format = forms.ChoiceField(choices=[("json", "JSON lines"), ("csv", "CSV")], label="Format")


def journal(request, *, verify_form=None, check=None):
    filter_form = JournalFilter(request.GET or None)
    query, filters = filter_form.query(), filter_form.filters()
    read = read_view(lambda view: service.window(
        view, view.sequence, before=_cursor(request, "before"), after=_cursor(request, "after"), **filters,
        first_day=query.first, last_day=query.last, oldest_first=not query.descending))
    head = read.head.sequence
    return render_screen(
        request, "console/journal.html", JOURNAL.title, read, window=read.data, filter_form=filter_form, query=query,
        lookup_form=LookupForm(), verify_form=verify_form or RangeForm(head=head, initial=_last_entries(head)),
        export_form=ExportForm(head=head, initial=_last_entries(head)), check=check,
        export_command=EXPORT_COMMAND,
        csv_form=CsvExportForm(initial={name: filter_form.data.get(name, "") for name in filter_form.fields}))


def _cursor(request, name: str) -> int | None:
    """Where the window starts (exclusive); like a page number it is no filter, so a new search starts afresh."""
    try:
        value = int(request.GET.get(name, ""))
    except ValueError:
        return None
    return value if value > 0 else None


def _last_entries(head: int) -> dict[str, int]:
    return {"first": max(1, head - 99), "last": max(1, head)}


@require_POST
def lookup(request):
    form = LookupForm(request.POST)
    outcome = owner().resolve(form.cleaned_data["command_id"]) if form.is_valid() else None
    if outcome is None:
        messages.error(request, "No command with that ID is in the ledger.")
        return redirect("admin:console-journal")
    return redirect("admin:console-journal-entry", sequence=outcome.sequence)


def entry(request, sequence: int):
    read = read_view(lambda view: service.entry_reads(view, sequence))
    reads = read.data
    if reads is None:
        raise Http404("no journal entry at that sequence")
    if request.GET.get("format") == "csv":
        return accounting.postings_download(reads.postings, sequence)
    found = reads.entry
    return render_screen(request, "console/journal_entry.html", f"Journal entry {sequence}", read, entry=found,
                         postings=reads.postings, touched=accounting.sealed(reads.touched),
                         summary=service.summary(found), events=[service.pretty(event) for event in reads.events],
                         envelope=service.pretty(found["envelope"]), result=service.pretty(found["result"]),
                         recomputed_ok=reads.recomputed_ok)


@require_POST
def verify(request):
    form = RangeForm(request.POST, head=owner().head().sequence)
    if not form.is_valid():
        return journal(request, verify_form=form)
    first, last = form.cleaned_data["first"], form.cleaned_data["last"]
    check = read_settled(lambda view: service.verify_range(view, first, last))
    return journal(request, verify_form=form, check=check)


@require_POST
def export(request):
    """The file is handed out only after the ledger recorded the access (docs/spec/domain-model-and-state-machines.md §6)."""
    form = ExportForm(request.POST, head=owner().head().sequence)
    if not form.is_valid():
        messages.error(request, "Export refused: " + " ".join(form.non_field_errors() or ["check the range"]))
        return redirect("admin:console-journal")
    data = form.cleaned_data
    content = read_settled(lambda view: service.export_bytes(view, data["first"], data["last"], data["file_format"]))
    if not _recorded(request, data["command_id"], data["file_format"], data["first"], data["last"],
                     service.export_digest(content)):
        return redirect("admin:console-journal")
    content_type, suffix = EXPORT_TYPES[data["file_format"]]
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="journal-{data["first"]}-{data["last"]}.{suffix}"'
    return response


@require_POST
def export_csv(request):
    """Every entry the screen's filters select, with the amounts and recipients each moved, in sequence order.

    Like any journal export it is handed out only after the ledger recorded the access, citing the sequences it
    covers and the digest of the very file: it is written once to a spooled temporary file while its digest is
    taken, then handed out from there."""
    form = CsvExportForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Export refused: " + " ".join(form.non_field_errors() or ["check the filters"]))
        return redirect("admin:console-journal")
    query, command_id = form.query(), form.cleaned_data["command_id"]
    filters = {name: value for name, value in form.filters().items() if name != "command_id"}
    first, last = read_settled(lambda view: service.admitted_span(view, view.sequence, query.first, query.last))
    refusal = _csv_refusal(first, last)
    if refusal:
        messages.error(request, f"Export refused: {refusal}")
        return redirect("admin:console-journal")

    spool, digest = read_settled(lambda view: exports.spooled(exports.journal_lines(view, first, last, filters)))
    if not _recorded(request, command_id, "csv", first, last, digest):
        spool.close()
        return redirect("admin:console-journal")
    return exports.spooled_response(spool, exports.filename("journal", query.first, query.last))


def _recorded(request, command_id: str, file_format: str, first: int, last: int, digest: str) -> bool:
    """Whether the ledger recorded the auditor's access to the file; if not, the message says why."""
    command = CommandRequest(EXPORT_COMMAND, {
        "export_id": command_id, "file_format": file_format, "first_sequence": first, "last_sequence": last,
        "content_sha256": digest})
    try:
        outcome = actions.run(request, command_id, EXPORT_COMMAND, lambda: command)
    except actions.ActionRefused as error:
        messages.error(request, str(error))
        return False
    if not outcome.accepted:
        actions.report(request, outcome, "Export recorded")
    return outcome.accepted


def _csv_refusal(first: int, last: int) -> str:
    if first > last:
        return "no entries were admitted on those days."
    if last - first >= service.MAX_RANGE:
        return f"an export covers at most {service.MAX_RANGE} entries; choose fewer days."
    return ""
