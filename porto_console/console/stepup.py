"""Step-up for human approvals: a fresh code from the user's own authenticator, then a proof the ledger checks.

The code travels with the approval's form. ``prove`` checks it against the
signed-in user's confirmed TOTP devices (django-otp refuses a code it has
already accepted and throttles wrong guesses per device) and only then signs a
step-up proof for exactly the command about to be submitted, with this
console's step-up key (``ledger_engine.domain.step_up``). The ledger verifies
that proof against the key it trusts; without one it refuses the approval, so
nothing but this path (a person with their authenticator, signed in to the
console) can approve. The internal API and worker credentials never come here.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache

import django_otp
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.domain import step_up
from ledger_engine.open_json import Unvalidated
from porto_console.console.roles import actor_id
from porto_console.ledger import gateway


class StepUpFailed(Exception):
    """The action needs a valid second factor; ``str(error)`` says why for the user."""


def has_device(user) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def prove(request, token: str | None, *, command_id: str, command_type: str, payload: Unvalidated) -> Unvalidated:
    """``payload`` with a step-up proof for this command, once ``token`` is a fresh code of the user's."""
    if not token:
        raise StepUpFailed(f"{command_type} needs a current code from your authenticator.")
    _verify(request, token)
    return {**step_up.without_proof(payload), step_up.PROOF_FIELD: step_up.sign(
        signing_key(), command_id=command_id, command_type=command_type, actor_id=actor_id(request.user),
        payload=payload, issued_at_ms=gateway().now_ms())}


def _verify(request, token: str) -> None:
    """Accept ``token`` from one of the user's confirmed devices and mark the session verified."""
    devices = list(TOTPDevice.objects.filter(user=request.user, confirmed=True))
    if not devices:
        raise StepUpFailed("You have no authenticator enrolled; ask an admin for an enrolment link.")
    wait_s = _throttled_for_s(devices)
    if wait_s:  # the code is not even tried: a try now would only lengthen the wait
        raise StepUpFailed(f"Too many wrong codes in a row: wait {wait_s} s, then enter the code your "
                           "authenticator shows then. Nothing was submitted.")
    for device in devices:
        if device.verify_token(token):
            django_otp.login(request, device)
            return
    if any(_already_used(device, token) for device in devices):
        raise StepUpFailed(f"That code was already used, for a sign-in or another approval. Wait for your "
                           f"authenticator's next code (in {_next_code_s(devices[0])} s) and enter it. "
                           "Nothing was submitted.")
    raise StepUpFailed("The authenticator code is not valid. Enter the code your authenticator shows now. "
                       "Nothing was submitted.")


def _throttled_for_s(devices: list[TOTPDevice]) -> int:
    """Whole seconds until django-otp lets the least throttled device try a code again; 0 if one may now."""
    waits = []
    for device in devices:
        allowed, throttled = device.verify_is_allowed()
        if allowed:
            return 0
        waits.append(math.ceil((throttled["locked_until"] - timezone.now()).total_seconds()))
    return max(1, min(waits))


def _already_used(device: TOTPDevice, token: str) -> bool:
    """``token`` is one of the device's codes that it accepted before (django-otp accepts each code once)."""
    if not token.isdigit():
        return False
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time()
    return totp.verify(int(token), device.tolerance) and totp.t() <= device.last_t


def _next_code_s(device: TOTPDevice) -> int:
    return device.step - int(time.time() - device.t0) % device.step


def signing_key() -> Ed25519PrivateKey:
    if not settings.STEP_UP_KEY:
        raise ImproperlyConfigured("PORTO_STEP_UP_KEY is not set: this console cannot sign step-up proofs")
    return _key(settings.STEP_UP_KEY)


def public_key() -> str | None:
    return step_up.public_key_hex(signing_key()) if settings.STEP_UP_KEY else None


@lru_cache(maxsize=2)
def _key(private_hex: str) -> Ed25519PrivateKey:
    try:
        return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(private_hex))
    except ValueError:
        raise ImproperlyConfigured("PORTO_STEP_UP_KEY is not a 32-byte Ed25519 private key in hex") from None
