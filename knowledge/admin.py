"""Operators' view of the pairs found to repeat or contradict each other, decided in bulk
through the same decisions as the review pages (knowledge.decisions)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest

from knowledge import decisions
from knowledge.models import MemoryPair
from memories.actors import Actor
from memories.admin.access import ByProjectRole, require_role
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
    list_filter = ["kind", "status", "project"]
    list_select_related = ["project", "first", "second"]
    search_fields = ["first__content", "second__content"]
    show_full_result_count = False
    actions = [
        _pair_action("Keep both (not a conflict)", "dismiss"),
        _pair_action("Keep the newer, supersede the older", "keep-newer"),
        _pair_action("Keep the older, supersede the newer", "keep-older"),
    ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [field.name for field in MemoryPair._meta.fields]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # found by the store, or proposed by a supersede

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # decided, never deleted: a dismissal has to stick
