"""Enrolment links: how a staff member sets their own password and authenticator, seen by nobody else.

An admin never sees a staff member's password, one-time password or
authenticator secret. Instead the ledger records that an admin sent an
enrolment link (``RecordProfileChange``), and only then does the console make
the link and email it to the address whose digest the account's ledger
identity holds. The link works once and expires; opening it lets its holder
set what the link is for (a new account: both factors; a reset: the one that
was reset, proving the other), and the ledger records the owner's completion
before the console stores the new secret. The admin sees only whether
enrolment is pending, and any refused second opening.

The first opening spends the link: the opening browser's session gets a claim
on it (``open_once``), and from then on only that claim, never the token,
reaches the link, for ``ENROLMENT_LINK_OPEN_TTL_S`` at most. Any later opening
of the token is refused, counted on the link for its admins to see, and ends
the link: two browsers had it, and nothing tells which was its owner's.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Max
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from ledger_engine.adapters.gateway import derived_command_id
from ledger_engine.application.transition import CommandOutcome
from ledger_engine.domain.commands.profile_changes import FACTORS_FOR
from ledger_engine.domain.identity import identity_matches
from ledger_engine.selectors import account_queries
from ledger_engine.selectors.view import LedgerView
from porto_console.console import commands, proof_version
from porto_console.console.commands import CommandRequest
from porto_console.console.models import EnrolmentLink
from porto_console.console.services.accounts import identity_key
from porto_console.console.services.users import has_enrolled
from porto_console.ledger import read_view

BOTH = FACTORS_FOR[None]
log = logging.getLogger("porto.console.enrolment")


class EnrolmentRefused(Exception):
    """The link cannot be sent or completed; ``str`` says why."""


@dataclass(frozen=True)
class EnrolmentStatus:
    """What an admin may know: the state, where the link went (masked) and when it expires."""

    state: str  # "enrolled", "pending" or "not enrolled"
    sent_to: str = ""
    expires_at: datetime | None = None
    link_open: bool = False
    refused_open_at: datetime | None = None  # a link of theirs was opened again, from another browser


def link_id_for(command_id: str) -> str:
    return f"link-{command_id}"


def link_request(account_id: str, link_id: str) -> CommandRequest:
    return CommandRequest("RecordProfileChange", {"account_id": account_id, "change": "enrolment_link_issued",
                                                  "link_id": link_id})


def pending_factors(view: LedgerView, account_id: str) -> list[str]:
    """What the owner's next enrolment sets: both for a new account, else the factor that was reset."""
    credentials = account_queries.credentials(view, account_id)
    return FACTORS_FOR[credentials["reset"] if credentials else None]


def _recorded_link(view: LedgerView, account_id: str) -> str | None:
    """The enrolment link the ledger last recorded as sent to the account, if any."""
    return (account_queries.credentials(view, account_id) or {}).get("link_id")


def require_not_enrolled(user: User) -> None:
    """One admin sends a link only to someone who has not set credentials, or whose reset two admins approved."""
    credentials = read_view(lambda view: account_queries.credentials(view, user.username)).data
    pending = credentials is not None and credentials["status"] == "pending"
    enrolled = (credentials is not None and credentials["status"] == "enrolled") or (credentials is None
                                                                                     and has_enrolled(user))
    if enrolled and not pending:
        raise EnrolmentRefused(f"{user.username} has enrolled already: new credentials need a reset, which a "
                               "second admin approves")


def require_deliverable(user: User) -> None:
    """The link goes only to the address the ledger's identity digest was made of."""
    account = read_view(lambda view: account_queries.account(view, user.username)).data
    if account is None or not user.email or not identity_matches(account.data, "staff", user.email, identity_key()):
        raise EnrolmentRefused(f"{user.username}'s email on file is not the identity their ledger account was "
                               "provisioned with, so no enrolment link can be sent")


def create_link(user: User, link_id: str, *, issued_by: str) -> EnrolmentLink:
    """Once the ledger accepted the link's record: replace any open link, store this one, email it.

    Only the link the ledger names now is made: two links sent at once are recorded one after the
    other, and the earlier one, which enrolment would refuse, is ``EnrolmentRefused`` and never mailed.
    """
    token = secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(seconds=settings.ENROLMENT_LINK_TTL_S)
    with transaction.atomic():
        existing = EnrolmentLink.objects.filter(link_id=link_id).first()
        if existing is not None:  # a retried form: the link exists, was mailed, and stays open
            assert existing.user_id == user.pk, f"link {link_id} is another user's"
            return existing
        named, factors = read_view(lambda view: (_recorded_link(view, user.username),
                                                  pending_factors(view, user.username))).data
        if named != link_id:
            raise EnrolmentRefused(f"a newer enrolment link for {user.username} was recorded meanwhile "
                                   f"({named}); that one is the link sent")
        EnrolmentLink.objects.filter(user=user, used_at=None, revoked_at=None).update(revoked_at=timezone.now())
        link, created = EnrolmentLink.objects.get_or_create(link_id=link_id, defaults={
            "user": user, "token_sha256": _digest(token), "factors": factors,
            "issued_by": issued_by, "expires_at": expires_at})
        if not created:  # the same retry, at the same moment: the other one mails it
            return link
    url = f"{settings.CONSOLE_URL.rstrip('/')}/enrol/{token}/"
    send_mail("Your Porto console enrolment link", _message(user, url, link), None, [user.email])
    return link


def _message(user: User, url: str, link: EnrolmentLink) -> str:
    sets = " and ".join("a password" if factor == "password" else "an authenticator app" for factor in link.factors)
    return (f"Hello {user.username},\n\nSet up your Porto console sign-in ({sets}) with this link. It works once "
            f"and expires at {link.expires_at:%Y-%m-%d %H:%M} UTC:\n\n{url}\n\nIf you did not expect this, tell "
            "your Porto admin; nobody else sees what you set.\n")


def link_for(token: str) -> EnrolmentLink | None:
    """The link this token names, in whatever state."""
    return EnrolmentLink.objects.filter(token_sha256=_digest(token)).select_related("user").first()


def open_once(link: EnrolmentLink) -> str | None:
    """The first opening of an open link: a claim for the opening browser's session, or None if it was opened.

    An opened link must be finished within ``ENROLMENT_LINK_OPEN_TTL_S``, or by its own expiry if sooner.
    """
    if not link.open or link.opened_at is not None:
        return None
    claim, now = secrets.token_urlsafe(32), timezone.now()
    finish_by = min(link.expires_at, now + timedelta(seconds=settings.ENROLMENT_LINK_OPEN_TTL_S))
    # Conditional on nobody having opened it meanwhile: of two browsers opening at once, one gets the claim.
    won = EnrolmentLink.objects.filter(pk=link.pk, opened_at=None).update(
        opened_at=now, claim_sha256=_digest(claim), expires_at=finish_by)
    return claim if won else None


def refuse_second_open(link: EnrolmentLink) -> None:
    """Another browser opened a link already opened: count it for the admins, and end the link."""
    now = timezone.now()
    EnrolmentLink.objects.filter(pk=link.pk).update(refused_opens=F("refused_opens") + 1, refused_open_at=now)
    EnrolmentLink.objects.filter(pk=link.pk, used_at=None, revoked_at=None).update(revoked_at=now)
    log.warning("enrolment link %s of %s opened again from another browser: refused, and the link ended",
                link.link_id, link.user.username, extra={"link_id": link.link_id, "account_id": link.user.username})


def claimed(link: EnrolmentLink, claim: str) -> bool:
    """Whether ``claim`` is the one the link's first opening gave its browser."""
    return bool(link.claim_sha256) and secrets.compare_digest(link.claim_sha256, _digest(claim))


def claimed_link(link_id: str, claim: str) -> EnrolmentLink | None:
    """The open link this browser's claim holds, if any."""
    link = EnrolmentLink.objects.filter(link_id=link_id).select_related("user").first()
    return link if link is not None and link.open and claimed(link, claim) else None


def status(user: User | None) -> EnrolmentStatus:
    """What the account's page tells an admin: never the link, only where it went, whether it is still open
    and when a link of theirs was last opened a second time."""
    if user is None:
        return EnrolmentStatus("no console user")
    credentials = read_view(lambda view: account_queries.credentials(view, user.username)).data
    refused = _latest_refused_open(user)
    if credentials is not None and credentials["status"] == "enrolled":
        return EnrolmentStatus("enrolled", refused_open_at=refused)
    link = EnrolmentLink.objects.filter(user=user, revoked_at=None).order_by("-created_at").first()
    if credentials is None and link is None:
        return EnrolmentStatus("enrolled" if user.has_usable_password() else "not enrolled", refused_open_at=refused)
    if link is None:
        return EnrolmentStatus("pending", refused_open_at=refused)
    return EnrolmentStatus("pending", _masked(user.email), link.expires_at, link.open, refused)


def _latest_refused_open(user: User) -> datetime | None:
    return EnrolmentLink.objects.filter(user=user, refused_opens__gt=0).aggregate(
        latest=Max("refused_open_at"))["latest"]


def pending_device(link: EnrolmentLink) -> TOTPDevice:
    """The unconfirmed authenticator this link's owner is setting up (made the first time the link is opened)."""
    device, _ = TOTPDevice.objects.get_or_create(user=link.user, name=f"enrolment {link.link_id}",
                                                 defaults={"confirmed": False})
    return device


def complete(link: EnrolmentLink, *, password: str | None) -> CommandOutcome:
    """The owner's enrolment: recorded by the ledger as theirs, then their new secrets are kept.

    The caller has checked the new factor (a code from the pending device, or
    the new password) and the factor the owner already had.
    """
    factors = sorted(link.factors)
    assert ("password" in factors) == (password is not None), factors
    request = CommandRequest("RecordProfileChange", {"account_id": link.user.username, "change": "enrolment_completed",
                                                     "link_id": link.link_id, "factors": factors})
    outcome = commands.submit(link.user.username, derived_command_id("enrolment-completed", link.link_id), request)
    if outcome.accepted:
        _keep(link, password)
    return outcome


def _keep(link: EnrolmentLink, password: str | None) -> None:
    user = link.user
    with transaction.atomic():
        if password is not None:
            user.set_password(password)
            user.save(update_fields=["password"])
        if "authenticator" in link.factors:
            device = pending_device(link)
            TOTPDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
            device.confirmed, device.name = True, "authenticator"
            device.save(update_fields=["confirmed", "name"])
        link.used_at = timezone.now()
        link.save(update_fields=["used_at"])
        proof_version.end_sessions(user)  # any session opened before: the owner signs in afresh now


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _masked(email: str) -> str:
    name, _, domain = email.partition("@")
    return f"{name[:1]}***@{domain}" if domain else "***"

