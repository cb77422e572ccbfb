"""Who may see and do what on the review pages (memories.roles): a 404 where a person has no
role, exactly as for what does not exist; a 403 where a viewer tries a reviewer's action.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404

from memories import replicas, roles, selectors
from memories.actors import Actor
from memories.models import Memory, Project, ReviewStatus, Role, Scope
from ops import telemetry
from review.views.parts import HtmxHttpRequest


def owner(memory: Memory) -> int | None:
    """The project whose roles govern a memory: None for a global memory."""
    return None if memory.scope == Scope.GLOBAL else memory.project_id


def may_see(request: HtmxHttpRequest, project_id: int | None) -> None:
    """A 404, exactly as for what does not exist, unless the person has a role there."""
    if not roles.may(request.user, project_id, Role.VIEWER):
        raise Http404("Nothing here, or nothing you have a role in.")
    replicas.note_project(project_id)


def visible_project(request: HtmxHttpRequest, slug: str, queryset: Any = None) -> Project:
    project: Project = get_object_or_404(
        queryset if queryset is not None else Project.objects.all(), slug=slug
    )
    may_see(request, project.pk)
    telemetry.record_project(project)
    return project


def may_read(request: HtmxHttpRequest, memory: Memory) -> None:
    """A 404 unless the person may read the memory: a role in its project; for a global
    proposal not yet approved, a global reviewer or its proposer (memories.selectors)."""
    may_see(request, owner(memory))
    if memory.scope == Scope.GLOBAL and memory.review_status != ReviewStatus.APPROVED:
        readable = selectors.global_memories_for(actor=Actor.for_user(request.user))
        if not readable.filter(pk=memory.pk).exists():
            raise Http404("Nothing here, or nothing you have a role in.")


def is_reviewer(request: HtmxHttpRequest, project_id: int | None) -> bool:
    return roles.may(request.user, project_id, Role.REVIEWER)


def reviews_all_it_sees(request: HtmxHttpRequest) -> bool:
    """Whether the person reviews every project (and the global memories) they can see:
    then a page of every project offers its actions; otherwise a project's own page does."""
    seen = set(roles.projects_for(request.user).values_list("pk", flat=True))
    reviewed = set(roles.projects_for(request.user, Role.REVIEWER).values_list("pk", flat=True))
    globals_ok = roles.role_in(request.user, None) in (None, Role.REVIEWER)
    return seen <= reviewed and globals_ok


def reviewer_for(request: HtmxHttpRequest, project_ids: Iterable[int | None]) -> Actor:
    """The signed-in reviewer of every one of these projects, or a 404 (no role) or 403 (a
    viewer)."""
    for project_id in set(project_ids):
        may_see(request, project_id)
        if not is_reviewer(request, project_id):
            raise PermissionDenied("Only the project's reviewers may change its memories.")
    return Actor.for_user(request.user)
