"""The history of memories: one row per change (memories.history writes and reads them)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from memories.models.choices import (
    EventAction,
    in_choices,
)
from memories.models.keys import ApiKey
from memories.models.memory import Memory
from memories.models.projects import Project
from memories.models.runs import Run


class MemoryEvent(models.Model):
    """One change to a memory: who, what (field: [before, after]), why.

    The memory reference carries no database constraint, so a deleted memory's
    history stays readable.
    """

    # A memory's history is read through event_memory_recent_idx; the actor and run keys,
    # empty on the system jobs' rows, through partial indexes. Policy jobs write history by
    # the hundred thousand: an index kept for nothing slows every one of those rows.
    memory = models.ForeignKey(
        Memory,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="events",
        db_index=False,
    )
    # The project is the memory's (whose key is constrained), and Django cascades a deleted
    # project to its history. A database constraint would check the project of each row
    # again at commit: a fifth of what a decay run spends on its history. Its rows are
    # found through event_project_id_idx, which starts with it.
    project = models.ForeignKey(
        Project,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="memory_events",
        db_constraint=False,
        db_index=False,
    )
    action = models.CharField(max_length=16, choices=EventAction)
    changes = models.JSONField(default=dict, blank=True)
    reason = models.TextField(blank=True)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memory_events",
        db_index=False,
    )
    actor_api_key = models.ForeignKey(
        ApiKey,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memory_events",
        db_index=False,
    )
    actor_label = models.CharField(max_length=200)
    # Checked with the project: (project_id, run_id) against the run's (project_id, id)
    # (memories 0029). A global memory's row (project NULL) is not checked (MATCH SIMPLE).
    run = models.ForeignKey(
        Run,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="memory_events",
        db_index=False,
        db_constraint=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=in_choices("action", EventAction), name="event_action_valid"
            ),
        ]
        indexes = [
            models.Index(fields=["memory", "-created_at"], name="event_memory_recent_idx"),
            # A project's history newest first, as the admin lists it
            # (WHERE project_id = %s ORDER BY id DESC LIMIT 50); in place of the index of the
            # foreign key alone, which served only the cascade of a deleted project (this
            # one does too).
            models.Index(fields=["project", "id"], name="event_project_id_idx"),
            models.Index(
                fields=["actor_user"],
                condition=Q(actor_user__isnull=False),
                name="event_actor_user_idx",
            ),
            models.Index(
                fields=["actor_api_key"],
                condition=Q(actor_api_key__isnull=False),
                name="event_actor_api_key_idx",
            ),
            models.Index(fields=["run"], condition=Q(run__isnull=False), name="event_run_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.action} of memory {self.memory_id} by {self.actor_label}"
