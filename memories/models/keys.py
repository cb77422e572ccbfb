"""API keys of a project, and the answers kept for idempotent retries."""

from __future__ import annotations

from django.db import models

from memories.models.projects import Project


class ApiKey(models.Model):
    """An agent's key to one project's API. Only a sha256 of the secret is stored."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    secret_hash = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["project", "name"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.project}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class IdempotencyRecord(models.Model):
    """The response to a create sent with an Idempotency-Key, replayed to retries."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField(null=True)
    # The response as sent, byte for byte.
    response_body = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="idempotency_key_unique")
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created_idx")]

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status})"
