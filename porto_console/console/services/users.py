"""Console users: the Django side of a staff account provisioned in the ledger.

The ledger account comes first; the Django user (same name, groups for its
console roles) follows only once the ledger accepted it.
"""

from __future__ import annotations

import secrets
from base64 import b32encode
from dataclasses import dataclass

from django.contrib.auth.models import Group, Permission, User

from porto_console.console import stepup
from porto_console.console.roles import ADMIN, CONSOLE_ROLES

# The admin role also looks after Django's own users and authenticators in the stock admin.
ADMIN_PERMISSIONS = ("auth.view_user", "auth.change_user", "auth.view_group",
                     "otp_totp.view_totpdevice", "otp_totp.delete_totpdevice")


@dataclass(frozen=True)
class Credentials:
    """Shown once: the initial password and the authenticator set-up."""

    username: str
    password: str
    otpauth_url: str
    totp_secret: str


def ensure_groups() -> dict[str, Group]:
    groups = {name: Group.objects.get_or_create(name=name)[0] for name in CONSOLE_ROLES}
    groups[ADMIN].permissions.set([_permission(name) for name in ADMIN_PERMISSIONS])
    return groups


def _permission(dotted: str) -> Permission:
    app_label, codename = dotted.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def sync_user(account_id: str, *, roles: list[str], active: bool, email: str = "") -> tuple[User, bool]:
    """Create or update the console user for a staff account; returns it and whether it is new."""
    groups = ensure_groups()
    user, created = User.objects.get_or_create(username=account_id, defaults={"email": email})
    user.is_staff = True
    user.is_active = active
    user.save(update_fields=["is_staff", "is_active"])
    user.groups.set([groups[role] for role in roles if role in groups])
    return user, created


def issue_credentials(user: User) -> Credentials:
    """A fresh random password and a new authenticator, replacing any earlier ones."""
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    user.totpdevice_set.all().delete()
    device = stepup.enrol(user)
    return Credentials(user.username, password, device.config_url, b32encode(device.bin_key).decode())
