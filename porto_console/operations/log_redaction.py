"""What a log line may say of a URL: the route a request matched, never a one-time link's secret.

A request is logged by its route pattern (``/enrol/<str:token>/``,
``/ledger/accounts/<str:handle>/``), not by the path it asked for. A path no
route matched is logged as sent, re-encoded: an attacker may choose it, but it
holds none of our secrets, unless it lies under a one-time link's prefix, where
whatever follows the prefix is a token, valid or not. ``redact`` removes such a
token from any text, so every line the console's handlers write is cleaned
whoever logged it (``json_logging.RedactOneTimeLinks``): Django's request and
security loggers, waitress, a traceback (docs/adr/0092).
"""

from __future__ import annotations

import re

from django.utils.encoding import escape_uri_path

# The routes of porto_console/urls.py that carry a secret token after these prefixes.
ONE_TIME_LINK_PREFIXES = ("/enrol/",)
REDACTED = "<redacted>"
# A route pattern's own placeholder (``<str:token>``) starts with "<", so it is left readable.
_TOKEN_AFTER_PREFIX = re.compile(
    "(" + "|".join(re.escape(prefix) for prefix in ONE_TIME_LINK_PREFIXES) + r")[^/\s?#&\"'<>\\]+")


def redact(text: str) -> str:
    return _TOKEN_AFTER_PREFIX.sub(rf"\g<1>{REDACTED}", text)


def loggable_path(request) -> str:
    """The route pattern the request matched, else its path re-encoded (a CR or LF cannot start a text line)."""
    match = getattr(request, "resolver_match", None)
    if match is not None and match.route:
        return "/" + match.route
    return redact(escape_uri_path(request.path))
