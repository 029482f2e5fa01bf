"""Error pages as console pages: what happened, and for a refusal which role is needed.

The 500 page is rendered from a template alone, with no database, ledger or
session: whatever failed must not fail it again. The traceback goes to the
logs (settings ``LOGGING``), never to the page.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpResponseServerError
from django.template import loader
from django.template.response import TemplateResponse


def _page(request, template: str, status: int, title: str, **context) -> TemplateResponse:
    response = TemplateResponse(request, template, {**admin.site.each_context(request), "title": title, **context},
                                status=status)
    return response.render()


def permission_denied(request, exception=None):
    reason = str(exception or "") or "Your role does not allow this."
    return _page(request, "403.html", 403, "Not allowed", reason=reason)


def not_found(request, exception=None):
    return _page(request, "404.html", 404, "Not found")


def server_error(request):
    return HttpResponseServerError(loader.get_template("500.html").render({}))
