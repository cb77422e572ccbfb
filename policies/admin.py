from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from policies.jobs import JOBS, label
from policies.models import JobState


@admin.register(JobState)
class JobStateAdmin(admin.ModelAdmin):
    """The last run of each policy job (the schedule itself is under Periodic tasks); a
    person runs the selected ones now with *Run now* (or ``manage.py run_job``)."""

    list_display = [
        "job",
        "name",
        "last_started_at",
        "last_finished_at",
        "last_changed",
        "last_batches",
        "last_complete",
    ]
    actions = ["run_now"]

    @admin.display(description="Job")
    def job(self, obj: JobState) -> str:
        return label(obj.name)

    @admin.action(description="Run now (the whole job, here)", permissions=["view"])
    def run_now(self, request: HttpRequest, queryset: QuerySet[JobState]) -> None:
        if not request.user.is_superuser:
            self.message_user(request, "Only an administrator runs jobs.", messages.ERROR)
            return
        names = sorted({state.name.partition(", ")[0] for state in queryset} & set(JOBS))
        for name in names:
            done = JOBS[name].run_now()
            self.message_user(request, f"{JOBS[name].label}: {done}", messages.SUCCESS)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
