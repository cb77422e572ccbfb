"""A project's memories: the filtered list, and one memory's page (its fields, history,
the runs it was given to and its confidence over time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from memories import selectors
from memories.models import Memory, MemoryEvent
from review.forms import SORTS, MemoryListFilter
from review.views.access import is_reviewer, may_read, owner, visible_project
from review.views.parts import HtmxHttpRequest, flag_pairs, keyset_page, template_for

HISTORY_SHOWN = 200


@require_GET
@login_required
def memory_list(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = visible_project(request, slug)
    filters = MemoryListFilter(
        request.GET or None, queryset=selectors.memory_rows(project.memories.all())
    )
    queryset = filters.qs if filters.is_bound else filters.queryset
    page = keyset_page(queryset, SORTS[filters.order_name], request.GET.get("after", ""))
    flag_pairs(page.object_list)
    query = request.GET.copy()
    for paging in ("after", "page"):  # where a page starts is no filter
        query.pop(paging, None)
    return render(
        request,
        template_for(request, "review/memories.html", "results"),
        {
            "project": project,
            "filters": filters,
            "page": page,
            "query": query.urlencode(),
            "view": "list",
            "is_reviewer": is_reviewer(request, project.pk),
        },
    )


@require_GET
@login_required
def memory_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    memory = get_object_or_404(
        Memory.objects.defer("search_vector", "match_keys").select_related(
            "project", "source_run", "approved_by", "merged_into"
        ),
        pk=pk,
    )
    may_read(request, memory)
    history = list(selectors.memory_history(memory_id=memory.pk)[:HISTORY_SHOWN])
    points = selectors.confidence_over_time(memory=memory, history=history)
    _name_approvers(history)
    return render(
        request,
        "review/memory.html",
        {
            "memory": memory,
            "history": history,
            "given": selectors.memory_runs(memory_id=memory.pk),
            "chart": _chart(points),
            "points": points,
            "is_reviewer": is_reviewer(request, owner(memory)),
            "view": "detail",
        },
    )


def _name_approvers(history: Sequence[MemoryEvent]) -> None:
    """History keeps the approver as a user id: show their name (one query)."""
    ids = {
        value
        for event in history
        for value in (event.changes or {}).get("approved_by") or []
        if isinstance(value, int)
    }
    if not ids:
        return
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
    for event in history:
        change = (event.changes or {}).get("approved_by")
        if change:
            event.changes = {
                **event.changes,
                "approved_by": [names.get(v, v) if isinstance(v, int) else v for v in change],
            }


@dataclass(frozen=True)
class Chart:
    """Confidence over time as an SVG draws it: points with their values, a time axis and
    a 0-1 value axis (plot area ``width`` x ``height`` inside margins)."""

    width: int
    height: int
    line: str
    points: list[dict[str, Any]]
    x_ticks: list[dict[str, Any]]
    y_ticks: list[dict[str, Any]]


def _chart(
    points: Sequence[tuple[Any, float]], width: int = 600, height: int = 120
) -> Chart | None:
    if not points:
        return None
    first, last = points[0][0].timestamp(), points[-1][0].timestamp()
    span = max(last - first, 1.0)

    def x(moment: Any) -> float:
        return round((moment.timestamp() - first) / span * width, 1)

    def y(value: float) -> float:
        return round((1 - value) * height, 1)

    marks = [
        {"x": x(moment), "y": y(value), "value": f"{value:.2f}", "when": moment}
        for moment, value in points
    ]
    middle = points[0][0] + (points[-1][0] - points[0][0]) / 2
    moments = [points[0][0], middle, points[-1][0]] if last > first else [points[0][0]]
    return Chart(
        width=width,
        height=height,
        line=" ".join(f"{mark['x']},{mark['y']}" for mark in marks),
        points=marks,
        x_ticks=[{"x": x(m), "label": m} for m in moments],
        y_ticks=[{"y": y(v), "label": f"{v:.1f}"} for v in (0.0, 0.3, 0.5, 1.0)],
    )
