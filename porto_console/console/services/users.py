"""Console users: the Django side of a staff account provisioned in the ledger.

The ledger account comes first; the Django user (same name, groups for its
console roles, active as the account is) follows only once the ledger
accepted it. No console user is ever a superuser, and the groups carry no
Django permissions: there are no stock model screens to use them on.
Superusers exist only through ``manage.py createsuperuser`` on the host.
"""

from __future__ import annotations

import secrets
from base64 import b32encode
from dataclasses import dataclass

from django.contrib.auth.models import Group, User
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.selectors import account_queries
from porto_console.console import proof_version
from porto_console.console.roles import CONSOLE_ROLES
from porto_console.ledger import read_view


@dataclass(frozen=True)
class Credentials:
    """A password and authenticator made for a labelled demo user (or a test), printed on the host."""

    username: str
    password: str
    otpauth_url: str
    totp_secret: str


def ensure_groups() -> dict[str, Group]:
    """The console's role groups, each made if missing, none holding a Django permission: two queries once
    they exist."""
    groups = {group.name: group for group in Group.objects.filter(name__in=CONSOLE_ROLES)}
    for name in CONSOLE_ROLES:
        if name not in groups:
            groups[name] = Group.objects.get_or_create(name=name)[0]
    Group.permissions.through.objects.filter(group__in=list(groups.values())).delete()
    return groups


def sync_user(account_id: str, *, roles: list[str], active: bool, email: str = "",
              groups: dict[str, Group] | None = None) -> tuple[User, bool]:
    """Create or update the console user for a staff account; returns it and whether it is new.

    A new user has no usable password and no authenticator until its owner enrols. A role taken away or
    a deactivation ends the user's sessions. ``groups``: what ``ensure_groups`` returned, when the
    caller syncs several users at once.
    """
    groups = ensure_groups() if groups is None else groups
    user, created = User.objects.get_or_create(username=account_id, defaults={"email": email})
    if created:
        user.set_unusable_password()
    held = set() if created else set(user.groups.values_list("name", flat=True))
    deactivated = user.is_active and not active and not created
    user.is_staff, user.is_superuser, user.is_active = True, False, active
    user.save()
    user.groups.set([groups[role] for role in roles if role in groups])
    if deactivated or held - set(roles):
        proof_version.end_sessions(user)
    return user, created


def sync_from_ledger(account_id: str) -> User | None:
    """Bring an existing console user's groups and status to what the ledger now says of its account."""
    account = read_view(lambda view: account_queries.account(view, account_id)).data
    if account is None or not User.objects.filter(username=account_id).exists():
        return None
    return sync_user(account_id, roles=account.roles, active=account.active)[0]


def has_enrolled(user: User) -> bool:
    return user.has_usable_password() or TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def issue_credentials(user: User) -> Credentials:
    """A fresh random password and a new authenticator: only for the labelled demo's users and for tests.

    Real staff set their own through an enrolment link (``services.enrolment``).
    """
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    user.totpdevice_set.all().delete()
    device = TOTPDevice.objects.create(user=user, name="authenticator", confirmed=True)
    return Credentials(user.username, password, device.config_url, b32encode(device.bin_key).decode())
