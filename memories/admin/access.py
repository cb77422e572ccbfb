"""What every admin of a project's things shares: it honours the project roles
(memories.roles), for its rows and for its bulk actions.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpRequest

from memories import roles
from memories.actors import Actor
from memories.models import Memory, Role, Scope


class ByProjectRole(admin.ModelAdmin):
    """The admin of a project's things honours the project roles (memories.roles): a person
    sees the rows of the projects where they have a role, and changes them only with
    ``change_role`` there (global rows: as a global reviewer). Superusers see everything."""

    project_field = "project"
    change_role = Role.REVIEWER

    def _project_id(self, obj: Any) -> int | None:
        if isinstance(obj, Memory) and obj.scope == Scope.GLOBAL:
            return None
        value = obj.pk if self.project_field == "pk" else getattr(obj, f"{self.project_field}_id")
        return int(value) if value is not None else None

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        visible = roles.projects_for(request.user).values("pk")
        seen = Q(**{f"{self.project_field}__in": visible})
        if self.project_field != "pk" and roles.role_in(request.user, None) is not None:
            seen |= self.global_rows(Actor.for_user(request.user))
        return queryset.filter(seen)

    def global_rows(self, actor: Actor) -> Q:
        """The rows of global memories a person with a role somewhere sees."""
        return Q(**{f"{self.project_field}__isnull": True})

    def _may(self, request: HttpRequest, obj: Any, role: Role) -> bool:
        return obj is None or roles.may(request.user, self._project_id(obj), role)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) and self._may(request, obj, Role.VIEWER)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        return allowed and self._may(request, obj, self.change_role)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        return allowed and self._may(request, obj, self.change_role)

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        # New rows go only to projects where the person holds the role to change them.
        if db_field.name == "project" and not request.user.is_superuser:
            kwargs["queryset"] = roles.projects_for(request.user, self.change_role)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


def require_role(request: HttpRequest, owners: Any, role: Role) -> None:
    """A bulk action acts only where the person holds ``role`` for every selected row's
    project (None: global memories)."""
    for owner in set(owners):
        if not roles.may(request.user, owner, role):
            raise PermissionDenied(
                f"You need the {role} role in every selected row's project to do that."
            )


class ReadOnly:
    """An admin list nobody adds to, changes or deletes from here: what it shows is written by
    the services (history, bulk edit jobs)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
