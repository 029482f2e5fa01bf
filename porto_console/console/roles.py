"""Console roles: Django groups named after the ledger's actor roles.

A console user's ledger actor ID is their username, which is their
``account_id`` in the ledger. The groups decide what the console shows and
offers; the ledger checks the actor's own roles again for every command, so a
screen check is never the only one.
"""

from __future__ import annotations

from functools import wraps
from typing import Callable, Iterable

from django.core.exceptions import PermissionDenied

from ledger_engine.domain.actors import ANY_STAFF
from ledger_engine.domain.registry import spec_for

FINANCE, OPS, ADMIN, AUDITOR = "finance", "ops", "admin", "auditor"
CONSOLE_ROLES = (FINANCE, OPS, ADMIN, AUDITOR)


def actor_id(user) -> str:
    return user.get_username()


def user_roles(user) -> frozenset[str]:
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    if not hasattr(user, "_console_roles"):
        user._console_roles = frozenset(user.groups.filter(name__in=CONSOLE_ROLES).values_list("name", flat=True))
    return user._console_roles


def has_role(user, roles: Iterable[str]) -> bool:
    return bool(user_roles(user) & frozenset(roles))


def command_roles(command_type: str) -> frozenset[str]:
    """The roles the ledger's registry accepts for ``command_type``: the screens offer exactly these."""
    return spec_for(command_type).roles


def may_submit(user, command_type: str) -> bool:
    roles = command_roles(command_type)
    if ANY_STAFF in roles and user.is_authenticated and user.is_active and user.is_staff:
        return True
    return has_role(user, roles)


def require_roles(roles: Iterable[str]) -> Callable:
    """View decorator: a user without one of ``roles`` gets 403 with the roles named."""
    allowed = frozenset(roles)

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def guarded(request, *args, **kwargs):
            if not has_role(request.user, allowed):
                raise PermissionDenied(f"This screen needs the {' or '.join(sorted(allowed))} role.")
            return view(request, *args, **kwargs)

        return guarded

    return decorate


def require_command(request, command_type: str) -> None:
    """The screen's check before it builds a command; the ledger repeats it with the actor's roles."""
    if not may_submit(request.user, command_type):
        needed = " or ".join(sorted(command_roles(command_type)))
        raise PermissionDenied(f"This action ({command_type}) needs the {needed} role.")
