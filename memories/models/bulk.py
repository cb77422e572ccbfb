"""Bulk edits: one change (approve, archive, expire, pin, retag, a tier) over every memory a
filter matched, run in the background in batches, with its progress, and undone as a whole.

A job snapshots the ids it covers when it starts (its items), so that what it changes is
what the person saw matched, whatever changes meanwhile. Each item says what became of its
memory and names the history row that changed it: the undo goes back through those rows.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from memories.models.choices import in_choices
from memories.models.projects import Project


class BulkAction(models.TextChoices):
    APPROVE = "approve"
    ARCHIVE = "archive"
    EXPIRE = "expire"
    PIN = "pin"
    UNPIN = "unpin"
    RETAG = "retag"
    SET_TIER = "set_tier", "change tier"
    UNDO = "undo"


class BulkStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    # Done, and then taken back by its undo job.
    UNDONE = "undone"


class ItemState(models.TextChoices):
    PENDING = "pending"
    CHANGED = "changed"
    # Already so: nothing to write.
    UNCHANGED = "unchanged"
    # Deleted since the job started.
    MISSING = "missing"
    FAILED = "failed"


class BulkEdit(models.Model):
    """One bulk edit: what it does, to how many memories, and how far it got."""

    # The project whose memories it changes; None for global memories (or memories of
    # several projects, from the admin).
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="bulk_edits"
    )
    action = models.CharField(max_length=16, choices=BulkAction)
    # The action's parameters (tags to add and remove, a tier) and what was filtered.
    parameters = models.JSONField(default=dict, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="bulk_edits",
    )
    actor_label = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=BulkStatus, default=BulkStatus.QUEUED)
    # The job an undo takes back: one undo per job, ever (bulk_edit_undone_once). Checked
    # with the project, (project_id, undo_of_id) against (project_id, id) (memories 0029):
    # an undo is its job's project's.
    undo_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="undone_by",
        db_index=False,  # bulk_edit_undone_once starts with it
        db_constraint=False,
    )
    total = models.PositiveIntegerField(default=0)
    # Memories dealt with (changed, already so, or gone since) and memories that failed.
    done = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=in_choices("action", BulkAction), name="bulk_edit_action_valid"
            ),
            models.CheckConstraint(
                condition=in_choices("status", BulkStatus), name="bulk_edit_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(action=BulkAction.UNDO, undo_of__isnull=False)
                | (~Q(action=BulkAction.UNDO) & Q(undo_of__isnull=True)),
                name="bulk_edit_undo_names_its_job",
            ),
            # With the project (an undo's is its job's, so nothing more is allowed), and
            # NULL projects equal: a job of no project is undone once too.
            models.UniqueConstraint(
                fields=["undo_of", "project"],
                condition=Q(undo_of__isnull=False),
                name="bulk_edit_undone_once",
                nulls_distinct=False,
            ),
            # What its items name it by, with the project (docs/scaling.md).
            models.UniqueConstraint(fields=["project", "id"], name="bulk_edit_project_id_unique"),
        ]

    def __str__(self) -> str:
        return f"bulk edit #{self.pk}: {self.get_action_display()} of {self.total} memories"

    @property
    def reason(self) -> str:
        """What each of its history rows says of why: the job that made it."""
        return f"bulk edit #{self.pk}"

    @property
    def finished(self) -> bool:
        return self.status not in (BulkStatus.QUEUED, BulkStatus.RUNNING)

    @property
    def percent(self) -> int:
        if not self.total:
            return 100 if self.finished else 0
        return min(100, (self.done + self.failed) * 100 // self.total)


class BulkEditItem(models.Model):
    """A memory a bulk edit covers (snapshotted when it started), and what became of it."""

    # The job's project, copied here when the job's memories are snapshotted (None for a
    # job of no project: global memories, or several projects'): the job is checked with it,
    # (project_id, job_id) against the job's (project_id, id) (memories 0029), and it is the
    # column a project's rows are distributed by (docs/scaling.md).
    project_id = models.BigIntegerField(null=True, blank=True)
    # Found through the unique (job, memory_id, project_id) index.
    job = models.ForeignKey(
        BulkEdit,
        on_delete=models.CASCADE,
        related_name="items",
        db_index=False,
        db_constraint=False,
    )
    # Plain ids: a memory deleted since keeps its item (and its history row its history).
    memory_id = models.BigIntegerField()
    state = models.CharField(max_length=16, choices=ItemState, default=ItemState.PENDING)
    # The history row that changed it (what the undo goes back through).
    event_id = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [
            # The project adds nothing (it is the job's), NULLs equal: the same rows are unique.
            models.UniqueConstraint(
                fields=["job", "memory_id", "project_id"],
                name="bulk_item_once_per_job",
                nulls_distinct=False,
            ),
            models.CheckConstraint(
                condition=in_choices("state", ItemState), name="bulk_item_state_valid"
            ),
        ]
        # The next batch of a job: its pending items in memory-id order.
        indexes = [
            models.Index(
                fields=["job", "memory_id"],
                condition=Q(state=ItemState.PENDING),
                name="bulk_item_pending_idx",
            )
        ]

    def __str__(self) -> str:
        return f"memory {self.memory_id} in bulk edit #{self.job_id}: {self.state}"
