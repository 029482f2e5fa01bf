"""What every screen shares: the admin frame, the head it read at, the raw units toggle, filters and paging."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.template.response import TemplateResponse

from porto_console.ledger import LedgerRead

RAW_UNITS = "console_raw_units"  # the session key that keeps the toggle from screen to screen


def render_screen(request, template: str, title: str, read: LedgerRead, **context: Any) -> TemplateResponse:
    """Render ``template`` in the admin frame, stating the ledger head the data was read at.

    ``raw`` (the raw units toggle) shows every amount on the screen as its integer minor units.
    """
    return TemplateResponse(request, template, {
        **admin.site.each_context(request), "title": title, "read_head": read.head, "raw": raw_units(request),
        **context})


def raw_units(request) -> bool:
    """The raw minor units toggle: ``?raw=1`` turns it on and ``?raw=0`` off, for every screen until changed."""
    if request.GET.get("raw") in ("0", "1"):
        request.session[RAW_UNITS] = request.GET["raw"] == "1"
    return bool(request.session.get(RAW_UNITS, False))
