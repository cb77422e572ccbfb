"""Runs: one agent run of a project."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from memories.models.choices import RunStatus, in_choices
from memories.models.projects import Project


class Run(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    external_id = models.CharField(max_length=200)
    task_title = models.CharField(max_length=500, blank=True)
    write_scope = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    status = models.CharField(max_length=16, choices=RunStatus, default=RunStatus.RUNNING)
    prompt_hash = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The memories the agent said it used, with its outcome (None: it said nothing).
    used_memory_ids = ArrayField(models.BigIntegerField(), null=True, blank=True)
    # What it asked the assembly for when it was first given memories (its intent, write
    # scope, budget...): a fit of the ranking asks again with other weights.
    context_request = models.JSONField(null=True, blank=True)
    # ``run.memories``: the memories it was given, declared on Memory (``Memory.runs``), so
    # that this module needs nothing of memory.py, which imports it.

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="run_external_id_unique"
            ),
            # What a project's rows name a run by, with the project (docs/scaling.md).
            models.UniqueConstraint(fields=["project", "id"], name="run_project_id_unique"),
            models.CheckConstraint(
                condition=in_choices("status", RunStatus), name="run_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(status="running", finished_at__isnull=True)
                | (~Q(status="running") & Q(finished_at__isnull=False)),
                name="run_finished_iff_outcome",
            ),
        ]
        indexes = [models.Index(fields=["project", "-started_at"], name="run_project_recent_idx")]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.status})"
