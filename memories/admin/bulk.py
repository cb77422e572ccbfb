"""Operators' bulk edits as background jobs (memories.services.bulk): actions over the
selected memories, or over every memory the list's filters match when "Select all" was
chosen (Django's ``select_across``), and a read-only list of the jobs with their progress
and an undo.

The actions start a job and return at once, whatever the number of memories; the job
refuses a selection with a memory the person does not review (the project roles of
memories.roles, as every admin action honours them).

``BULK_ACTIONS`` goes into ``MemoryAdmin.actions``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html

from memories.actors import Actor
from memories.admin.access import ByProjectRole, ReadOnly
from memories.models import BulkAction, BulkEdit, Memory
from memories.services import bulk


def _start(
    modeladmin: admin.ModelAdmin,
    request: HttpRequest,
    queryset: QuerySet[Memory],
    action: str,
    parameters: dict[str, Any] | None = None,
) -> None:
    try:
        job = bulk.bulk_edit_start(
            memories=queryset,
            action=action,
            actor=Actor.for_user(request.user),
            parameters=parameters,
            described="the admin's selection",
        )
    except (PermissionDenied, ValidationError) as error:
        text = "; ".join(error.messages) if isinstance(error, ValidationError) else str(error)
        modeladmin.message_user(request, text, messages.ERROR)
        return
    link = reverse("admin:memories_bulkedit_change", args=[job.pk])
    modeladmin.message_user(
        request,
        format_html(
            'Bulk edit <a href="{}">#{}</a> started over {} memories: it runs in the'
            " background, and can be undone as a whole once done.",
            link,
            job.pk,
            f"{job.total:,}",
        ),
        messages.SUCCESS,
    )


def _job_action(action: str, description: str) -> Callable[..., None]:
    def run(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Memory]) -> None:
        _start(modeladmin, request, queryset, action)

    run.__name__ = f"bulk_{action}"
    return admin.action(description=description)(run)


class RetagForm(forms.Form):
    add = forms.CharField(required=False, help_text="Comma-separated tags to add.")
    remove = forms.CharField(required=False, help_text="Comma-separated tags to remove.")


class TierForm(forms.Form):
    tier = forms.ChoiceField(choices=[("hot", "hot"), ("warm", "warm"), ("cold", "cold")])


def _asking(
    action: str, description: str, form_class: type[forms.Form]
) -> Callable[..., HttpResponse | None]:
    """An action that asks for its parameters first (a page of its own), then starts."""

    def run(
        modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Memory]
    ) -> HttpResponse | None:
        form = form_class(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            _start(modeladmin, request, queryset, action, dict(form.cleaned_data))
            return None
        return render(
            request,
            "admin/memories/bulk_edit.html",
            {
                **modeladmin.admin_site.each_context(request),
                "title": description,
                "form": form,
                "action": f"bulk_{action}",
                "select_across": request.POST.get("select_across", "0"),
                "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
                "count": queryset.count() if request.POST.get("select_across") != "1" else None,
                "opts": modeladmin.model._meta,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
            },
        )

    run.__name__ = f"bulk_{action}"
    return admin.action(description=description)(run)


BULK_ACTIONS = [
    _job_action(BulkAction.APPROVE, "Approve, as a background job"),
    _job_action(BulkAction.ARCHIVE, "Archive, as a background job"),
    _job_action(BulkAction.EXPIRE, "Expire now, as a background job"),
    _job_action(BulkAction.PIN, "Pin, as a background job"),
    _job_action(BulkAction.UNPIN, "Unpin, as a background job"),
    _asking(BulkAction.RETAG, "Change tags, as a background job", RetagForm),
    _asking(BulkAction.SET_TIER, "Change tier, as a background job", TierForm),
]


@admin.register(BulkEdit)
class BulkEditAdmin(ReadOnly, ByProjectRole):
    """The bulk edits: read-only, with their progress; a finished one can be undone."""

    list_display = [
        "id",
        "action",
        "project",
        "status",
        "progress",
        "changed",
        "failed",
        "actor_label",
        "created_at",
        "finished_at",
    ]
    list_filter = ["status", "action"]
    list_select_related = ["project"]
    show_full_result_count = False
    readonly_fields = [
        "project",
        "action",
        "parameters",
        "actor",
        "actor_label",
        "status",
        "undo_of",
        "total",
        "done",
        "changed",
        "failed",
        "error",
        "created_at",
        "started_at",
        "finished_at",
    ]
    actions = ["undo"]

    def global_rows(self, actor: Actor) -> Q:
        # Jobs over global memories (or several projects): their author's.
        return Q(project__isnull=True, actor=actor.user)

    @admin.display(description="progress")
    def progress(self, obj: BulkEdit) -> str:
        return f"{obj.done + obj.failed:,} of {obj.total:,} ({obj.percent}%)"

    @admin.action(description="Undo (as a background job)")
    def undo(self, request: HttpRequest, queryset: QuerySet[BulkEdit]) -> None:
        actor = Actor.for_user(request.user)
        for job in queryset.order_by("pk"):
            try:
                undo = bulk.bulk_edit_undo(job=job, actor=actor)
            except (PermissionDenied, ValidationError) as error:
                text = "; ".join(error.messages) if isinstance(error, ValidationError) else error
                self.message_user(request, f"#{job.pk}: {text}", messages.ERROR)
            else:
                self.message_user(
                    request,
                    f"Bulk edit #{job.pk} is being undone by bulk edit #{undo.pk}.",
                    messages.SUCCESS,
                )
