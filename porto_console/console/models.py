"""What the console keeps in Django's own database about staff credentials (never domain data).

The ledger records who sent which enrolment link and who completed it
(``RecordProfileChange``); Django keeps the link's secret (as a hash) and its
expiry, and which approved staff changes it has carried out.
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
