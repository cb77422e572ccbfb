"""Who sees which project. An API key sees only its own project; anything else answers 404,
exactly as for a project that does not exist. A signed-in person sees the projects where
they have a role (memories.roles) and writes only where they are a reviewer."""

from __future__ import annotations

from django.db.models import QuerySet
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request

from api.auth import actor_for, api_key_of
from memories import replicas, roles, selectors
from memories.models import Memory, Project, Role, Scope
from memories.text import is_whole_number
from ops import telemetry

PROJECT_NOT_FOUND = "No project {ref!r} here (or your key belongs to another project)."


def projects_for(request: Request) -> QuerySet[Project]:
    projects = Project.objects.select_related("policy")
    api_key = api_key_of(request)
    if api_key is not None:
        return projects.filter(pk=api_key.project_id)
    return projects.filter(pk__in=roles.projects_for(request.user).values("pk"))


def project_or_404(request: Request, ref: str) -> Project:
    """The project named by id or slug, if the caller may see it."""
    api_key = api_key_of(request)
    if api_key is not None:
        # Authentication loaded the key's project (and its policy): no second query.
        own = api_key.project
        if ref == own.slug or (is_whole_number(ref) and len(ref) <= 18 and int(ref) == own.pk):
            telemetry.record_project(own)
            return own
        raise NotFound(PROJECT_NOT_FOUND.format(ref=ref))
    projects = projects_for(request)
    if is_whole_number(ref) and len(ref) <= 18:
        project = projects.filter(pk=int(ref)).first()
    else:
        project = projects.filter(slug=ref).first()
    if project is None:
        raise NotFound(PROJECT_NOT_FOUND.format(ref=ref))
    replicas.note_project(project.pk)
    telemetry.record_project(project)
    return project


def project_memory_or_404(project: Project, memory_id: int) -> Memory:
    memory = (
        Memory.objects.filter(project=project, pk=memory_id)
        .exclude(scope=Scope.GLOBAL)
        .select_related("approved_by")
        .defer("search_vector", "match_keys")
        .first()
    )
    if memory is None:
        raise NotFound(f"No memory {memory_id} in project {project.slug}.")
    return memory


def global_memories(request: Request) -> QuerySet[Memory]:
    """The global memories the caller may read: approved ones, and proposals not yet
    approved only for global reviewers and the proposing project (memories.selectors)."""
    return selectors.global_memories_for(actor=actor_for(request))


def global_memory_or_404(request: Request, memory_id: int) -> Memory:
    """A global memory the caller may read; any other answers 404, as one that does not
    exist."""
    memory = (
        global_memories(request)
        .filter(pk=memory_id)
        .select_related("approved_by")
        .defer("search_vector", "match_keys")
        .first()
    )
    if memory is None:
        raise NotFound(f"No global memory {memory_id}.")
    return memory


def require_reviewer(request: Request, project: Project, action: str) -> None:
    """Signed-in people write to a project as its reviewers; keys write their own project."""
    if api_key_of(request) is None and not roles.may(request.user, project.pk, Role.REVIEWER):
        raise PermissionDenied(
            f"You need the reviewer role in project {project.slug!r} to {action};"
            " a viewer only reads."
        )


def require_proposer(request: Request) -> None:
    """A global memory is proposed by a key, or by a person who reviews somewhere (a project,
    or the global memories): a viewer only reads."""
    if api_key_of(request) is not None or roles.may(request.user, None, Role.REVIEWER):
        return
    if not roles.projects_for(request.user, Role.REVIEWER).exists():
        raise PermissionDenied(
            "You need the reviewer role in a project (or of global memories) to propose a"
            " global memory; a viewer only reads."
        )


def require_global_reader(request: Request) -> None:
    """Global memories are read by any key, and by people with a role somewhere."""
    if api_key_of(request) is None and roles.role_in(request.user, None) is None:
        raise NotFound("No global memories here: you have no role in any project.")
