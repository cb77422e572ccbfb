"""The review page of an entity: the memories that mention it and its neighbours (links to
theirs), where a project's reviewers add or remove a relationship (knowledge.graph)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from knowledge import graph
from knowledge.models import Entity, LinkType
from memories import roles
from memories.actors import Actor
from memories.models import Role
from memories.text import is_whole_number

TEMPLATE = "review/entity.html"


def _entity(request: HttpRequest, pk: int) -> Entity:
    entity = get_object_or_404(Entity.objects.select_related("project"), pk=pk)
    if not roles.may(request.user, entity.project_id, Role.VIEWER):
        raise Http404("Nothing here, or nothing you have a role in.")
    return entity


def _depth(request: HttpRequest) -> int:
    raw = request.GET.get("depth", "1")
    return int(raw) if is_whole_number(raw) and 1 <= int(raw) <= graph.MAX_DEPTH else 1


def _page(request: HttpRequest, entity: Entity, depth: int, status: int = 200) -> HttpResponse:
    htmx = getattr(request, "htmx", None)
    template = f"{TEMPLATE}#neighbours" if htmx and htmx.target == "neighbours" else TEMPLATE
    context = {
        "entity": entity,
        "project": entity.project,
        "depth": depth,
        "depths": range(1, graph.MAX_DEPTH + 1),
        "memories": graph.entity_memories(entity_id=entity.pk),
        "neighbours": graph.neighbours(entity=entity, depth=depth),
        "is_reviewer": roles.may(request.user, entity.project_id, Role.REVIEWER),
        "link_types": LinkType.choices,
    }
    return render(request, template, context, status=status)


@require_GET
@login_required
def entity_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _page(request, _entity(request, pk), _depth(request))


@require_POST
@login_required
def entity_link(request: HttpRequest, pk: int) -> HttpResponse:
    """Add (``action=add``: another entity of the project by name, and a type) or remove
    (``action=remove``: ``other`` by id) a relationship."""
    entity = _entity(request, pk)
    if not roles.may(request.user, entity.project_id, Role.REVIEWER):
        raise PermissionDenied("Only the project's reviewers may change its relationships.")
    action = request.POST.get("action", "")
    others = Entity.objects.filter(project=entity.project)
    other: Entity | None = None
    problem = ""
    if action == "add":
        name = request.POST.get("name", "").strip()
        other = others.filter(key=name.lower()).first() if name else None
        if other is None:
            problem = (
                f"No entity named {name!r} in this project: name one its memories mention."
                if name
                else "Name the entity to relate this one to."
            )
    elif action == "remove":
        raw = request.POST.get("other", "")
        other = (
            others.filter(pk=int(raw)).first() if is_whole_number(raw) and len(raw) < 19 else None
        )
        if other is None:
            problem = "No such entity in this project to remove."
    else:
        problem = "Choose to add or to remove a relationship."
    if other is not None:
        actor = Actor.for_user(request.user)
        try:
            if action == "add":
                graph.entity_link_set(
                    entity=entity, other=other, type=request.POST.get("type", ""), actor=actor
                )
                messages.success(request, f"{entity.name} and {other.name} are related now.")
            else:
                graph.entity_link_remove(entity=entity, other=other, actor=actor)
                messages.success(request, f"{entity.name} and {other.name} are not related now.")
        except ValidationError as error:
            problem = " ".join(error.messages)
    if problem:
        messages.error(request, problem)
    if getattr(request, "htmx", None):
        return _page(request, entity, 1, status=400 if problem else 200)
    return HttpResponseRedirect(reverse("review:entity", args=[entity.pk]))
