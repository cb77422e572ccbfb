"""Operators' view of the pairs found to repeat or contradict each other, decided in bulk
through the same decisions as the review pages (knowledge.decisions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from knowledge import decisions
from knowledge.models import Entity, EntityLink, EntityTerm, JudgeAnswer, MemoryPair
from memories import roles
from memories.actors import Actor
from memories.admin.access import ByProjectRole, require_role
from memories.admin.lists import EstimatedCountPaginator, ProjectFilter
from memories.models import Role


def _pair_action(description: str, action: str) -> Callable[..., None]:
    """An admin action that decides the selected pairs (knowledge.decisions.pairs_resolve)."""

    def decide(
        modeladmin: MemoryPairAdmin, request: HttpRequest, queryset: QuerySet[MemoryPair]
    ) -> None:
        actor = Actor.for_user(request.user)
        try:
            require_role(request, queryset.values_list("project_id", flat=True), Role.REVIEWER)
        except PermissionDenied as error:
            modeladmin.message_user(request, str(error), messages.ERROR)
            return
        done, failed = decisions.pairs_resolve(
            pair_ids=list(queryset.values_list("id", flat=True)), action=action, actor=actor
        )
        modeladmin.message_user(request, f"{description}: {len(done)} decided.", messages.SUCCESS)
        for pair_id, why in failed[:10]:
            modeladmin.message_user(request, f"Pair {pair_id}: {why}", messages.WARNING)

    decide.__name__ = action.replace("-", "_")
    return admin.action(description=description)(decide)


@admin.register(MemoryPair)
class MemoryPairAdmin(ByProjectRole):
    """Pairs found to repeat or possibly contradict each other; decided through actions (the
    review pages show them side by side)."""

    list_display = [
        "id",
        "kind",
        "status",
        "project",
        "first",
        "second",
        "similarity",
        "created_at",
    ]
    list_filter = ["kind", "status", ProjectFilter]
    list_select_related = ["project", "first", "second"]
    search_fields = ["first__content", "second__content"]
    search_help_text = (
        "#123 or 123: the pairs of memory 123. Words are looked for in both memories without"
        " an index: pick a project first."
    )
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    # Newest first through the primary key; no other column is indexed in a whole list's
    # order.
    ordering = ["-id"]
    sortable_by = ["id"]
    actions = [
        _pair_action("Keep both (not a conflict)", "dismiss"),
        _pair_action("Keep the newer, supersede the older", "keep-newer"),
        _pair_action("Keep the older, supersede the newer", "keep-older"),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [field.name for field in MemoryPair._meta.fields]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[MemoryPair], search_term: str
    ) -> tuple[QuerySet[MemoryPair], bool]:
        number = search_term.strip().removeprefix("#")
        if number.isdigit() and len(number) < 19:
            # Through the indexes of the two foreign keys.
            memory_id = int(number)
            return queryset.filter(Q(first_id=memory_id) | Q(second_id=memory_id)), False
        return super().get_search_results(request, queryset, search_term)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # found by the store, or proposed by a supersede

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # decided, never deleted: a dismissal has to stick


@admin.register(EntityTerm)
class EntityTermAdmin(ByProjectRole):
    """The words a project marks as entities (a product, a vendor: ``Stripe``), kept by its
    maintainers; memories written from then on mention them (``manage.py read_entities
    --project`` reads the older ones again)."""

    change_role = Role.MAINTAINER
    list_display = ["name", "project"]
    list_filter = [ProjectFilter]
    list_select_related = ["project"]
    search_fields = ["name"]
    autocomplete_fields = ["project"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return super().has_add_permission(request) and (
            request.user.is_superuser or roles.projects_for(request.user, Role.MAINTAINER).exists()
        )


@admin.register(Entity)
class EntityAdmin(ByProjectRole):
    """The names memories mention, as read from their words (read only: the words decide)."""

    list_display = ["name", "kind", "project", "created_at"]
    list_filter = ["kind", ProjectFilter]
    list_select_related = ["project"]
    search_fields = ["key"]
    search_help_text = "The start of a name (case does not matter)."
    paginator = EstimatedCountPaginator
    show_full_result_count = False
    # In name order, through entity_key_unique (every project) or entity_project_key_idx
    # (one project).
    ordering = ["key", "project"]
    sortable_by = ()

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [field.name for field in Entity._meta.fields]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Entity], search_term: str
    ) -> tuple[QuerySet[Entity], bool]:
        # The key is the name in lower case, in byte order: a prefix walks its b-tree.
        start = search_term.strip().lower()
        return (queryset.filter(key__startswith=start) if start else queryset), False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(EntityLink)
class EntityLinkAdmin(ByProjectRole):
    """Relationships reviewers added or removed on the entity pages."""

    list_display = ["first", "second", "type", "removed", "actor_label", "updated_at"]
    list_filter = ["type", "removed", ProjectFilter]
    list_select_related = ["first", "second"]
    paginator = EstimatedCountPaginator
    show_full_result_count = False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["project", "first", "second", "created_by", "actor_label", "created_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # added on the entity pages, between two entities of one project


@admin.register(JudgeAnswer)
class JudgeAnswerAdmin(admin.ModelAdmin):
    """What the judge model said about pairs the rules could not decide (knowledge.judge),
    kept by the two texts' content hashes. Read only, and for administrators only: the rows
    belong to no project, and their spans and reasons quote memories of any project."""

    list_display = ["key", "model", "verdict", "reason", "created_at"]
    list_filter = ["verdict", "model"]
    search_fields = ["=key"]
    show_full_result_count = False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [field.name for field in JudgeAnswer._meta.fields]

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # asked of the model by the pair finder

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
