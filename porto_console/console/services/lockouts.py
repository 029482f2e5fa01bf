"""Sign-in lockouts (django-axes): who is locked out where, and lifting one once the ledger recorded it.

A lockout is one username from one address (settings ``AXES_LOCKOUT_PARAMETERS``).
The ledger records each clearance with the username and address as digests,
and the account when the username is one, so an auditor sees who let whom
try again without the ledger holding anyone's IP address.
"""

from __future__ import annotations

import hashlib
import re

from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import QuerySet

from ledger_engine.envelope import IDENTIFIER_PATTERN
from ledger_engine.selectors import account_queries
from porto_console.console.commands import CommandRequest
from porto_console.ledger import read_view

HANDLE = "lockout"
DIGEST_DOMAIN = "porto:console:lockout:v1\n"


def locked() -> QuerySet:
    return AccessAttempt.objects.filter(failures_since_start__gte=settings.AXES_FAILURE_LIMIT).order_by("-attempt_time")


def attempted_at_ms(attempt: AccessAttempt) -> int:
    return int(attempt.attempt_time.timestamp() * 1000)


def clearance(command_id: str, attempt: AccessAttempt) -> CommandRequest:
    username = attempt.username or ""
    payload = {"clearance_id": f"lockout-{command_id}", "username_digest": _digest("username", username),
               "address_digest": _digest("address", attempt.ip_address or ""),
               "failures": attempt.failures_since_start}
    if re.fullmatch(IDENTIFIER_PATTERN, username) and _is_account(username):
        payload["account_id"] = username
    return CommandRequest("RecordLockoutCleared", payload)


def _is_account(username: str) -> bool:
    return read_view(lambda view: account_queries.account(view, username)).data is not None


def clear(attempt: AccessAttempt) -> None:
    """Lift this username-and-address lockout only."""
    AccessAttempt.objects.filter(pk=attempt.pk).delete()


def _digest(kind: str, value: str) -> str:
    return hashlib.sha256(f"{DIGEST_DOMAIN}{kind}\n{value}".encode()).hexdigest()
