"""``/verify/``: the page where a recipient checks a statement file. No sign-in; nothing leaves the browser.

The page's policy allows its own script and style only and no connection at
all, so a file dropped on it cannot be sent anywhere. It reads the statement
format (domain, version, field lists, patterns) from the ledger's own
definition, so the browser and ``porto-ledger verify-statement`` check alike,
and pins this deployment's checkpoint verifier key: the page says "Verified"
only for a file whose checkpoint that key signed.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.views.decorators.http import require_safe

from ledger_engine.domain.ruleset import ASSETS
from ledger_engine.merkle.checkpoint import DEMO_CHECKPOINT_SEED_HEX
from ledger_engine.merkle.statement import verifier_format
from porto_console.statement_files import pinned_verifier_key

CONTENT_SECURITY_POLICY = ("default-src 'self'; connect-src 'none'; object-src 'none'; base-uri 'none'; "
                           "form-action 'none'; frame-ancestors 'none'")


@require_safe
def statement_verifier(request: HttpRequest) -> HttpResponse:
    key = pinned_verifier_key()
    context = {"format": verifier_format(key), "key": key, "display": {"asset_places": ASSETS},
               "demo_key": settings.CHECKPOINT_KEY == DEMO_CHECKPOINT_SEED_HEX}
    response = HttpResponse(render_to_string("verify/statement.html", context))
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response
