from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from policies.models import JobState


@admin.register(JobState)
class JobStateAdmin(admin.ModelAdmin):
    """The last run of each policy job (the schedule itself is under Periodic tasks)."""

    list_display = [
        "name",
        "last_started_at",
        "last_finished_at",
        "last_changed",
        "last_batches",
        "last_complete",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
