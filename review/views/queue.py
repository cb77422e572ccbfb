"""The review queue: what waits for a decision, keyset-paged in the order the reviewer picks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core import signing
from django.db.models import Q
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memories import roles, selectors
from memories.actors import Actor
from memories.models import Memory, Project
from review.views.access import is_reviewer, reviews_all_it_sees, visible_project
from review.views.parts import PAGE_SIZE, HtmxHttpRequest, flag_pairs, template_for


@require_GET
@login_required
def queue(request: HtmxHttpRequest, slug: str | None = None) -> HttpResponse:
    project = visible_project(request, slug) if slug else None
    context = queue_context(request, project, request.GET)
    return render(request, template_for(request, "review/queue.html", "results"), context)


QUEUE_ORDERS = [("newest", "Newest first"), ("least-confident", "Least confident first")]


@dataclass
class QueuePage:
    """A page of the queue, keyset-paged: it starts after a row (``after``), so a page
    never skips a memory however many left the queue meanwhile."""

    object_list: list[Memory]
    count: int  # memories waiting, in all
    after: str  # where this page starts ("" for the first)
    next_after: str | None

    def __iter__(self) -> Any:
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)


def _sort_key(order: str, memory: Memory) -> list[Any]:
    if order == "least-confident":
        return [memory.confidence, memory.pk]
    return [memory.created_at.isoformat(), memory.pk]


def _after(order: str, cursor: str) -> Q | None:
    """The rows after ``cursor`` in ``order``; None for a cursor that is not one of ours."""
    try:
        kind, value, pk = signing.loads(cursor, salt="review-queue")
        if kind != order:
            return None
        if order == "least-confident":
            return Q(confidence__gt=float(value)) | Q(confidence=float(value), pk__lt=int(pk))
        moment = datetime.fromisoformat(value)
        return Q(created_at__lt=moment) | Q(created_at=moment, pk__lt=int(pk))
    except (signing.BadSignature, TypeError, ValueError):
        return None


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
    cursor = params.get("after", "")
    start = _after(order, cursor) if cursor else None
    if start is None:
        cursor = ""
    rows = list((waiting.filter(start) if start is not None else waiting)[: PAGE_SIZE + 1])
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    page = QueuePage(
        object_list=rows,
        count=waiting.count(),
        after=cursor,
        next_after=signing.dumps([order, *_sort_key(order, rows[-1])], salt="review-queue")
        if more
        else None,
    )
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
