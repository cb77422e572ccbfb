"""What the policy jobs remember between runs."""

from __future__ import annotations

from django.db import models


class JobState(models.Model):
    """One policy job: its last run (the review pages show it) and, for a job that goes on
    from where it stopped, the id its walk has reached."""

    name = models.CharField(max_length=50, primary_key=True)
    cursor = models.BigIntegerField(default=0)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_changed = models.PositiveIntegerField(default=0)
    last_batches = models.PositiveIntegerField(default=0)
    # False when the last run stopped at its time budget with work left.
    last_complete = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
