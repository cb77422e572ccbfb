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
    # What the last run looked at and why it changed what it did (the walk for conflicts:
    # pairs compared, and why each was or was not opened), for the review pages.
    # (A database default too, for a process of the previous release during a deploy.)
    last_report = models.JSONField(
        default=dict, blank=True, db_default=models.Value({}, output_field=models.JSONField())
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class PendingComparison(models.Model):
    """A memory for consolidation to compare with its project's memories again, wherever its
    walk has got to: the walk passes each memory once, and this memory's words, type or
    neighbours changed after it passed (an edit, a reactivation, a near-duplicate whose
    merge had to wait). The id is no foreign key: a memory deleted meanwhile leaves a row
    that the next consolidation drops."""

    memory_id = models.BigIntegerField(primary_key=True)
    queued_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"memory {self.memory_id}"
