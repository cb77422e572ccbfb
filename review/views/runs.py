"""A project's runs: the list, and one run with what it was given and what its outcome did."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from memories import selectors
from memories.models import MemoryEvent, Run
from review.views.access import visible_project
from review.views.parts import HtmxHttpRequest, paginate

RUNS_PAGE_SIZE = 20


RUN_STATUSES = [
    ("", "any"),
    ("running", "running"),
    ("succeeded", "succeeded"),
    ("failed", "failed"),
]


@require_GET
@login_required
def runs(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = visible_project(request, slug)
    status = request.GET.get("status", "")
    text = request.GET.get("q", "").strip()[:200]
    found = selectors.runs_recent(project=project)
    if status in {value for value, _ in RUN_STATUSES if value}:
        found = found.filter(status=status)
    else:
        status = ""
    if text:
        found = found.filter(Q(external_id__icontains=text) | Q(task_title__icontains=text))
    query = QueryDict(mutable=True)
    query.update({k: v for k, v in {"status": status, "q": text}.items() if v})
    return render(
        request,
        "review/runs.html",
        {
            "project": project,
            "page": paginate(request, found, RUNS_PAGE_SIZE),
            "status": status,
            "statuses": RUN_STATUSES,
            "q": text,
            "query": query.urlencode(),
        },
    )


@require_GET
@login_required
def run_detail(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """A run: what it was given (rank, score) and what its outcome did to each memory's
    confidence (from their history)."""
    project = visible_project(request, slug)
    run = get_object_or_404(Run.objects.filter(project=project), pk=pk)
    given = list(
        run.given.select_related("memory")
        .only(
            "rank", "score", "memory__id", "memory__type", "memory__content", "memory__confidence"
        )
        .order_by("rank")
    )
    moved = {
        event.memory_id: event.changes.get("confidence")
        for event in MemoryEvent.objects.filter(run=run, action="outcome").only(
            "memory_id", "changes"
        )
    }
    rows = [{"given": g, "moved": moved.get(g.memory_id)} for g in given]
    return render(request, "review/run.html", {"project": project, "run": run, "rows": rows})
