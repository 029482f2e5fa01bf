"""Statement files for finance: a recipient's statement with its proof, and the parts file of each of its day lines,
to hand to the recipient."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from ledger_engine.errors import LedgerError
from porto_console.console.handles import seal, unseal_id, unseal_ids
from porto_console.console.views.common import render_screen
from porto_console.statement_files import day_lines_of, parts_file_for, statement_file_for, statement_read

HANDLE = "statement"
PARTS_HANDLE = "statement-day-line"


@require_GET
def download(request, handle: str):
    """The statement file as an attachment; when it has none yet, back to the payables with why."""
    try:
        name, content = statement_file_for(unseal_id(HANDLE, handle))
    except LedgerError as error:
        messages.error(request, f"No statement file: {error.detail}")
        return redirect("admin:console-payout-prepare")
    return attachment(name, content)


@require_GET
def files(request, handle: str):
    """The statement's files: its statement file, and one parts file per day line."""
    statement_id = unseal_id(HANDLE, handle)
    try:
        read = statement_read(statement_id)
    except LedgerError as error:
        messages.error(request, f"No statement file: {error.detail}")
        return redirect("admin:console-payout-prepare")
    day_lines = [(line, parts_url(statement_id, line["line_id"])) for line in day_lines_of(read.data)]
    return render_screen(request, "console/statement_files.html", f"Statement files of {read.data['recipient_id']}",
                         read, statement=read.data, statement_id=statement_id, day_lines=day_lines,
                         file_url=reverse("admin:console-statement-file", args=[handle]))


@require_GET
def download_parts(request, handle: str):
    """One day line's parts file as an attachment; when there is none, back to the statement's files with why."""
    statement_id, line_id = unseal_ids(PARTS_HANDLE, handle, 2)
    try:
        name, content = parts_file_for(statement_id, line_id)
    except LedgerError as error:
        messages.error(request, f"No parts file: {error.detail}")
        return redirect("admin:console-statement-files", seal(HANDLE, statement_id))
    return attachment(name, content)


def parts_url(statement_id: str, line_id: str) -> str:
    return reverse("admin:console-statement-parts", args=[seal(PARTS_HANDLE, f"{statement_id}/{line_id}")])


def attachment(name: str, content: bytes) -> HttpResponse:
    response = HttpResponse(content, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
