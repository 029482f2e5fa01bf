"""Statement files for finance: a recipient's statement with its proof, to hand to the recipient."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET

from ledger_engine.errors import LedgerError
from porto_console.console.handles import unseal_id
from porto_console.statement_files import statement_file_for

HANDLE = "statement"


@require_GET
def download(request, handle: str):
    """The statement file as an attachment; when it has none yet, back to the payables with why."""
    try:
        name, content = statement_file_for(unseal_id(HANDLE, handle))
    except LedgerError as error:
        messages.error(request, f"No statement file: {error.detail}")
        return redirect("admin:console-payout-prepare")
    response = HttpResponse(content, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
