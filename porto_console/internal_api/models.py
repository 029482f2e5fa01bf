"""What the internal API keeps in Django's database: worker credentials, which are not domain data."""

from __future__ import annotations

from django.db import models


class WorkerCredential(models.Model):
    """A bearer credential: a public selector plus the SHA-256 of a secret shown once at issue."""

    name = models.CharField(max_length=100, help_text="The worker this credential belongs to.")
    actor_id = models.CharField(max_length=200, help_text="The ledger actor the worker acts as.")
    command_types = models.JSONField(default=list, help_text="The command types the worker may submit.")
    selector = models.CharField(max_length=32, unique=True)
    secret_sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name"], condition=models.Q(revoked_at=None),
                                    name="one_active_credential_per_worker"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.actor_id})"

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def may_submit(self, command_type: str) -> bool:
        return command_type in self.command_types
