"""Every change to a person's proof ends their sessions.

A session stands on what its user proved when signing in: a password, an
authenticator, roles and an active account. Each person has a proof version
(``ProofVersion``), raised by ``end_sessions`` whenever one of those is taken
away: a password or authenticator reset, a role removed, a deactivation, and a
completed enrolment (which replaces what a reset took). A sign-in writes the
version into its session; ``ProofVersionMiddleware`` signs out any session
holding another, so its next request goes to the login page and its forms
submit nothing. Django's own session hash covers a password change only; a
lost or stolen authenticator is the case it missed (docs/adr/0092).
"""

from __future__ import annotations

from django.contrib.auth import SESSION_KEY as USER_SESSION_KEY, logout
from django.contrib.auth.signals import user_logged_in
from django.db.models import F
from django.dispatch import receiver

from porto_console.console.models import ProofVersion

SESSION_KEY = "porto_proof_version"


def current(user) -> int:
    return ProofVersion.objects.filter(user=user).values_list("version", flat=True).first() or 0


def end_sessions(user) -> None:
    """Sign ``user`` out of every session opened before now."""
    ProofVersion.objects.get_or_create(user=user)
    ProofVersion.objects.filter(user=user).update(version=F("version") + 1)


@receiver(user_logged_in, dispatch_uid="porto-proof-version-at-sign-in")
def _remember_at_sign_in(sender, request, user, **kwargs) -> None:
    if request is not None and hasattr(request, "session"):
        request.session[SESSION_KEY] = current(user)


class ProofVersionMiddleware:
    """After authentication: a session signed in before its user's latest proof change is signed out."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        if USER_SESSION_KEY in request.session and request.user.is_authenticated \
                and request.session.get(SESSION_KEY) != current(request.user):
            logout(request)
        return self.get_response(request)
