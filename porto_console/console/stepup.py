"""Step-up authentication for money actions: a fresh code from one of the user's TOTP devices.

The code travels with the action's form and is checked just before the command
is built. django-otp refuses a code it has already accepted and throttles
wrong guesses per device.
"""

from __future__ import annotations

import django_otp
from django_otp.plugins.otp_totp.models import TOTPDevice


class StepUpFailed(Exception):
    """The action needs a valid second factor; ``str(error)`` says why for the user."""


def has_device(user) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def verify(request, token: str) -> None:
    """Accept ``token`` from one of the user's confirmed devices and mark the session verified."""
    devices = list(TOTPDevice.objects.filter(user=request.user, confirmed=True))
    if not devices:
        raise StepUpFailed("You have no authenticator enrolled; an admin must provision one before you can approve.")
    for device in devices:
        if device.verify_token(token):
            django_otp.login(request, device)
            return
    raise StepUpFailed("The authenticator code is not valid (or was already used). Enter the current code.")


def enrol(user) -> TOTPDevice:
    """A new confirmed TOTP device for ``user``; its ``config_url`` is shown once to set up an app."""
    return TOTPDevice.objects.create(user=user, name="authenticator", confirmed=True)
