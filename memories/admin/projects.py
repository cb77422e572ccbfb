"""The admin of projects and what belongs to them: their policy, members, API keys and runs.
Keys are created and revoked through memories.services.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from memories import services
from memories.admin.access import ByProjectRole, require_role
from memories.admin.lists import EstimatedCountPaginator, ProjectFilter
from memories.models import ApiKey, Membership, MemoryPolicy, Project, Role, Run, RunMemory


class MemoryPolicyInline(admin.StackedInline):
    model = MemoryPolicy
    can_delete = False
    min_num = 1
    max_num = 1


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(ByProjectRole):
    """A project's maintainers change its policy, keys and members."""

    project_field = "pk"
    change_role = Role.MAINTAINER
    list_display = ["name", "slug", "created_at", "memories_link"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MemoryPolicyInline, MembershipInline]

    @admin.display(description="memories")
    def memories_link(self, obj: Project) -> str:
        # The way to a project's memories when the memories' project filter does not list it.
        url = reverse("admin:memories_memory_changelist")
        return format_html('<a href="{}?project__id__exact={}">memories</a>', url, obj.pk)


@admin.register(Membership)
class MembershipAdmin(ByProjectRole):
    change_role = Role.MAINTAINER
    list_display = ["project", "user", "role", "created_at"]
    list_filter = ["role", ProjectFilter]
    list_select_related = ["project", "user"]
    search_fields = ["user__username", "project__slug"]
    autocomplete_fields = ["user", "project"]


class RunMemoryInline(admin.TabularInline):
    model = RunMemory
    extra = 0
    can_delete = False
    raw_id_fields = ["memory"]
    readonly_fields = ["memory", "rank", "score", "created_at"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ByProjectRole):
    list_display = ["external_id", "project", "task_title", "status", "started_at", "finished_at"]
    list_filter = [ProjectFilter, "status"]
    search_fields = ["external_id", "task_title"]
    search_help_text = (
        "Words of the external id or the task, looked for without an index: pick a project"
        " first on a long list."
    )
    list_select_related = ["project"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    sortable_by = ()
    readonly_fields = [
        "project",
        "external_id",
        "task_title",
        "write_scope",
        "status",
        "prompt_hash",
        "started_at",
        "finished_at",
    ]
    inlines = [RunMemoryInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Runs are started by agents through the API (memories.services.run_start).
        return False

    def get_ordering(self, request: HttpRequest) -> list[str]:
        # Newest first either way: one project's through run_project_recent_idx, every
        # project's through the primary key (started_at has no index of its own).
        if request.GET.get(ProjectFilter.parameter_name):
            return ["-started_at", "-id"]
        return ["-id"]


class ApiKeyForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ["project", "name"]


@admin.register(ApiKey)
class ApiKeyAdmin(ByProjectRole):
    change_role = Role.MAINTAINER

    list_display = ["name", "project", "prefix", "created_at", "last_used_at", "revoked_at"]
    list_filter = [ProjectFilter]
    autocomplete_fields = ["project"]
    search_fields = ["name", "prefix"]
    list_select_related = ["project"]
    actions = ["revoke"]

    def get_form(
        self, request: HttpRequest, obj: ApiKey | None = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs["form"] = ApiKeyForm
        return super().get_form(request, obj, change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        if obj is None:
            return []
        return ["project", "name", "prefix", "created_at", "last_used_at", "revoked_at"]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: forms.ModelForm, change: bool):
        if change:
            return
        api_key, token = services.api_key_create(
            project=form.cleaned_data["project"], name=form.cleaned_data["name"]
        )
        obj.pk = api_key.pk
        self.message_user(
            request,
            f"API key {api_key.name!r} created. Copy it now, it is not shown again: {token}",
            messages.WARNING,
        )

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoke instead: history keeps pointing at the key

    @admin.action(description="Revoke", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        try:
            require_role(request, queryset.values_list("project_id", flat=True), Role.MAINTAINER)
        except PermissionDenied as error:
            self.message_user(request, str(error), messages.ERROR)
            return
        for api_key in queryset:
            services.api_key_revoke(api_key=api_key)
        self.message_user(request, f"Revoked {queryset.count()} keys.", messages.SUCCESS)
