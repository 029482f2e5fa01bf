"""``/metrics``: the Prometheus text format, for a scraper holding ``PORTO_METRICS_TOKEN`` as a bearer token.

Without a configured token the endpoint is off (403 ``METRICS_DISABLED``);
a request without the token, or with another one, is 401
``UNAUTHENTICATED`` and logged. The token is compared in constant time.
Outside the labelled demo a configured token shorter than 32 characters
stops the console at start (``console/safety.py``); an absent one only turns
the endpoint off (docs/adr/0037).
"""

from __future__ import annotations

import hmac
import logging

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, ProcessCollector, generate_latest

from porto_console.operations.command_metrics import REGISTRY
from porto_console.operations.ledger_gauges import LedgerGauges

log = logging.getLogger("porto.operations.metrics")

REGISTRY.register(LedgerGauges())
ProcessCollector(registry=REGISTRY)


def _presented_token(request) -> bytes:
    scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    return token.strip().encode() if scheme.lower() == "bearer" else b""


@require_safe
@never_cache
def metrics(request):
    expected = settings.METRICS_TOKEN
    if not expected:
        return JsonResponse({"code": "METRICS_DISABLED", "detail": "set PORTO_METRICS_TOKEN to serve metrics"},
                            status=403)
    if not hmac.compare_digest(_presented_token(request), expected.encode()):
        log.warning("metrics refused: no valid bearer token", extra={"remote_addr": request.META.get("REMOTE_ADDR")})
        response = JsonResponse({"code": "UNAUTHENTICATED", "detail": "a valid bearer token is required"}, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
