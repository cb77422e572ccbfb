"""The review queue: what waits for a decision, keyset-paged in the order the reviewer picks."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memories import roles, selectors
from memories.actors import Actor
from memories.models import Project
from review.views.access import is_reviewer, reviews_all_it_sees, visible_project
from review.views.parts import HtmxHttpRequest, flag_pairs, keyset_page, template_for


@require_GET
@login_required
def queue(request: HtmxHttpRequest, slug: str | None = None) -> HttpResponse:
    project = visible_project(request, slug) if slug else None
    context = queue_context(request, project, request.GET)
    return render(request, template_for(request, "review/queue.html", "results"), context)


QUEUE_ORDERS = [("newest", "Newest first"), ("least-confident", "Least confident first")]


def queue_context(request: HtmxHttpRequest, project: Project | None, params: Any) -> dict[str, Any]:
    """The context of the queue page (and of its refill after an action)."""
    order = params.get("order", "newest")
    if order not in selectors.REVIEW_ORDERS:
        order = "newest"
    waiting = selectors.memories_for_review(
        project=project,
        order=order,
        within=roles.projects_for(request.user),
        reader=Actor.for_user(request.user) if roles.role_in(request.user, None) else None,
    )
    only_global = project is None and params.get("scope") == "global"
    if only_global:
        waiting = waiting.filter(project__isnull=True)
    page = keyset_page(waiting, selectors.REVIEW_ORDERS[order], params.get("after", ""))
    flag_pairs(page.object_list)
    return {
        "project": project,
        "page": page,
        "order": order,
        "orders": QUEUE_ORDERS,
        "scope": "global" if only_global else "",
        "view": "queue",
        "is_reviewer": is_reviewer(request, project.pk)
        if project
        else reviews_all_it_sees(request),
    }
