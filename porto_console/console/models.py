"""What the console keeps in Django's own database about staff credentials (never domain data).

The ledger records who sent which enrolment link and who completed it
(``RecordProfileChange``); Django keeps the link's secret (as a hash), its
expiry, the browser that opened it (as a hash of that browser's claim) and any
refused second opening, which approved staff changes it has carried out, and
each person's proof version (``console/proof_version.py``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class EnrolmentLink(models.Model):
    """A one-time link with which a staff member sets their own password and/or authenticator."""

    link_id = models.CharField(max_length=100, unique=True, help_text="The opaque ID the ledger records.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrolment_links")
    token_sha256 = models.CharField(max_length=64, unique=True)
    factors = models.JSONField(help_text="What the owner sets with it: authenticator, password, or both.")
    issued_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Replaced by a newer link, or guessed at.")
    failures = models.PositiveIntegerField(default=0, help_text="Wrong codes or passwords entered with it.")
    opened_at = models.DateTimeField(null=True, blank=True, help_text="First opened: only that browser may use it.")
    claim_sha256 = models.CharField(max_length=64, blank=True, help_text="The opening browser's claim on it.")
    refused_opens = models.PositiveIntegerField(default=0, help_text="Openings after the first, each refused.")
    refused_open_at = models.DateTimeField(null=True, blank=True, help_text="The latest refused opening.")

    def __str__(self) -> str:
        return f"{self.link_id} for {self.user}"

    @property
    def open(self) -> bool:
        return self.used_at is None and self.revoked_at is None and timezone.now() < self.expires_at


class AppliedStaffChange(models.Model):
    """An approved ledger staff change whose Django side (groups, status, cleared credentials) is done."""

    change_id = models.CharField(max_length=200, unique=True)
    applied_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.change_id


class ProofVersion(models.Model):
    """How many times a person's proof changed; a session signed in at an older version is over."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="proof_version")
    version = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.user} at {self.version}"
