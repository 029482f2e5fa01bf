"""What every screen shares: the admin frame, the head it read at, filters and paging links."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.template.response import TemplateResponse

from porto_console.ledger import LedgerRead


def render_screen(request, template: str, title: str, read: LedgerRead, **context: Any) -> TemplateResponse:
    """Render ``template`` in the admin frame, stating the ledger head the data was read at."""
    return TemplateResponse(request, template, {
        **admin.site.each_context(request), "title": title, "read_head": read.head, **context})


def filter_values(form) -> dict[str, str]:
    """The cleaned values of a GET filter form; an invalid filter shows everything."""
    if form.is_valid():
        return {name: value or "" for name, value in form.cleaned_data.items()}
    return {name: "" for name in form.fields}
