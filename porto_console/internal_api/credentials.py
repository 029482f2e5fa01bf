"""Worker bearer credentials: issue, revoke, authenticate.

A token is ``porto-worker.<selector>.<secret>``. The selector finds the
credential; only the SHA-256 of the 32-byte secret is stored, compared in
constant time. Each credential names the ledger actor the worker acts as and
the command types it may submit; the ledger checks that actor's roles again.

No credential is ever issued for a human-approval command type (one whose
registry entry declares step-up: approving a payout run, a recipient update,
a staff change, ...). Those need a person's fresh authenticator proof, which
only the console's step-up service makes after checking a code; a worker
token cannot carry one, and the ledger refuses the command without it.

Nor is one issued for the ledger's own actor or a command only the owner
submits in process (``actors.LEDGER_OWNER``, ``CommandSpec.owner_only``,
docs/adr/0073).

Nor does one credential carry duties kept apart (``actors.CONFLICTING_ROLES``):
a credential that may record signed payment attempts may not record what the
chain did with them (``ROLE_CONFLICT``). A payment worker holds two, one for
each (docs/adr/0090).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta

from django.db import transaction
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from ledger_engine.domain.actors import LEDGER_OWNER, role_conflict
from ledger_engine.domain.registry import registered_types, spec_for
from ledger_engine.domain.ruleset import ROLES
from ledger_engine.envelope import IDENTIFIER_PATTERN
from porto_console.internal_api.errors import ApiCode, ApiError
from porto_console.internal_api.models import WorkerCredential

TOKEN_PREFIX = "porto-worker"
SELECTOR_BYTES = 8
SELECTOR_PATTERN = f"[0-9a-f]{{{2 * SELECTOR_BYTES}}}"
SECRET_BYTES = 32
# Recording every request's use would make each read a database write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class CredentialError(Exception):
    """A credential cannot be issued or revoked as asked."""


class RoleConflict(CredentialError):
    """The credential would carry two duties kept apart (its message starts with the code, ``ROLE_CONFLICT``)."""


def commands_for_role(role: str) -> list[str]:
    """The command types the ledger lets an actor with ``role`` submit."""
    if role not in ROLES:
        raise CredentialError(f"unknown role {role!r}; roles are {sorted(ROLES)}")
    return [command_type for command_type in registered_types() if role in spec_for(command_type).roles]


def issue(name: str, actor_id: str, command_types: list[str]) -> tuple[WorkerCredential, str]:
    """Create an active credential; returns it with its token, which is never stored."""
    if not re.fullmatch(IDENTIFIER_PATTERN, actor_id):
        raise CredentialError(f"{actor_id!r} is not a ledger actor ID")
    if actor_id == LEDGER_OWNER:
        raise CredentialError(f"OWNER_ONLY: {LEDGER_OWNER} is the ledger's own actor; only the owner acts as it")
    unknown = sorted(set(command_types) - set(registered_types()))
    if unknown:
        raise CredentialError(f"unknown command types: {', '.join(unknown)}")
    owners = sorted(command_type for command_type in set(command_types) if spec_for(command_type).owner_only)
    if owners:
        raise CredentialError(f"OWNER_ONLY: refusing {', '.join(owners)}: only the ledger's owner submits these, "
                              "in its own process")
    human = sorted(command_type for command_type in set(command_types) if spec_for(command_type).human_approval)
    if human:
        raise CredentialError(
            f"refusing {', '.join(human)}: a person approves these with a fresh authenticator code through the "
            "console's step-up, and the ledger refuses them without its proof, so no worker credential may carry "
            "them")
    _require_no_role_conflict(command_types)
    selector, secret = secrets.token_hex(SELECTOR_BYTES), secrets.token_urlsafe(SECRET_BYTES)
    with transaction.atomic():
        if WorkerCredential.objects.filter(name=name, revoked_at=None).exists():
            raise CredentialError(f"worker {name!r} already has an active credential; revoke it first")
        credential = WorkerCredential.objects.create(
            name=name, actor_id=actor_id, command_types=sorted(set(command_types)),
            selector=selector, secret_sha256=_digest(secret))
    return credential, f"{TOKEN_PREFIX}.{selector}.{secret}"


def _require_no_role_conflict(command_types: list[str]) -> None:
    """The roles the commands need (those only one role may submit) hold no pair of duties kept apart."""
    needs = {command_type: spec_for(command_type).roles for command_type in set(command_types)}
    conflict = role_conflict(next(iter(roles)) for roles in needs.values() if len(roles) == 1)
    if conflict is not None:
        carried = sorted(command_type for command_type, roles in needs.items() if roles <= conflict)
        raise RoleConflict(
            f"ROLE_CONFLICT: refusing {', '.join(carried)} on one credential: it would hold "
            f"{' and '.join(sorted(conflict))} together. Whoever signs a payment never records what the chain did "
            "with it, so each duty gets a credential (and an actor) of its own")


def revoke(name: str) -> WorkerCredential:
    credential = WorkerCredential.objects.filter(name=name, revoked_at=None).first()
    if credential is None:
        raise CredentialError(f"worker {name!r} has no active credential")
    credential.revoked_at = timezone.now()
    credential.save(update_fields=["revoked_at"])
    return credential


def authenticate(token: str) -> WorkerCredential:
    """The active credential ``token`` belongs to, or ``ApiError(UNAUTHENTICATED)``."""
    prefix, _, rest = token.partition(".")
    selector, _, secret = rest.partition(".")
    well_formed = prefix == TOKEN_PREFIX and re.fullmatch(SELECTOR_PATTERN, selector)
    credential = WorkerCredential.objects.filter(selector=selector).first() if well_formed else None
    if credential is None or not hmac.compare_digest(credential.secret_sha256, _digest(secret)):
        raise ApiError(ApiCode.UNAUTHENTICATED, "unknown bearer credential")
    if not credential.active:
        raise ApiError(ApiCode.UNAUTHENTICATED, "this credential has been revoked")
    _record_use(credential)
    return credential


def _record_use(credential: WorkerCredential) -> None:
    now = timezone.now()
    if credential.last_used_at is None or now - credential.last_used_at >= LAST_USED_RESOLUTION:
        WorkerCredential.objects.filter(pk=credential.pk).update(last_used_at=now)
        credential.last_used_at = now


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class WorkerBearer(HttpBearer):
    """Ninja authentication: ``Authorization: Bearer porto-worker.<selector>.<secret>``."""

    def authenticate(self, request: HttpRequest, token: str) -> WorkerCredential:
        return authenticate(token)
