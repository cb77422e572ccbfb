"""Repeats and conflicts: the pairs of memories that repeat or may contradict each other,
side by side, and the reviewer's decision on them (knowledge.decisions).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.db.models import Q
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from knowledge import decisions, queries
from knowledge.models import MemoryPair
from memories import roles, services
from memories.actors import Actor
from memories.text import is_whole_number
from policies.models import JobState
from review.views.access import (
    is_reviewer,
    may_see,
    reviewer_for,
    reviews_all_it_sees,
    visible_project,
)
from review.views.parts import HtmxHttpRequest, paginate, return_url, template_for

PAIR_STATUSES = {"open": "Open", "dismissed": "Judged compatible", "resolved": "Resolved"}


@require_GET
@login_required
def conflicts(request: HtmxHttpRequest, slug: str | None = None) -> HttpResponse:
    """The pairs of a project (or of every project) that repeat or may contradict each
    other, open ones first by default, each with both memories side by side."""
    project = visible_project(request, slug) if slug else None
    wanted = request.GET.get("status", "open")
    if wanted not in PAIR_STATUSES:
        wanted = "open"
    if project is not None:
        pairs = MemoryPair.objects.filter(project=project)
    else:
        seen = Q(project__in=roles.projects_for(request.user))
        if roles.role_in(request.user, None) is not None:
            seen |= Q(project__isnull=True)
        pairs = MemoryPair.objects.filter(seen)
    # The open queue by how likely and how consequential a pair is (knowledge.keep); the
    # decided ones newest first.
    pairs = (
        queries.open_pairs(pairs).order_by("-priority", "-id")
        if wanted == "open"
        else pairs.filter(status=wanted).order_by("-created_at", "-id")
    )
    page = paginate(request, pairs)
    memories = decisions.pair_memories(list(page.object_list))
    return render(
        request,
        template_for(request, "review/conflicts.html", "results"),
        {
            "project": project,
            "page": page,
            "rows": [
                {
                    "pair": pair,
                    "first": memories.get(pair.first_id),
                    "second": memories.get(pair.second_id),
                }
                for pair in page.object_list
            ],
            "status": wanted,
            "statuses": PAIR_STATUSES,
            # What the last walk compared, and why it opened what it did (and not the rest).
            "walk": JobState.objects.filter(name="find_conflicts").first(),
            "query": f"status={wanted}",
            "is_reviewer": is_reviewer(request, project.pk)
            if project
            else reviews_all_it_sees(request),
        },
    )


@require_GET
@login_required
def conflict_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    pair = get_object_or_404(MemoryPair.objects.select_related("project"), pk=pk)
    may_see(request, pair.project_id)
    sides = queries.pair_sides(pair)
    best = max((side.memory for side in sides), key=decisions.precedence, default=None)
    return render(
        request,
        "review/conflict.html",
        {
            "pair": pair,
            "project": pair.project,
            "sides": sides,
            "merged_text": best.content if best else "",
            "is_reviewer": is_reviewer(request, pair.project_id),
        },
    )


@require_POST
@login_required
def conflict_action(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Decide a pair: keep one, merge, keep both (dismiss) or reject one."""
    pair = get_object_or_404(MemoryPair, pk=pk)
    actor = reviewer_for(request, [pair.project_id])
    action = request.POST.get("action", "")
    raw = request.POST.get("memory", "")
    memory_id = int(raw) if is_whole_number(raw) and len(raw) <= 18 else None
    back = return_url(request, reverse("review:conflict", args=[pair.pk]))
    try:
        decided = decisions.pair_resolve(
            pair_id=pair.pk,
            action=action,
            actor=actor,
            memory_id=memory_id,
            content=request.POST.get("content") if action == "merge" else None,
            reason=request.POST.get("reason", ""),
        )
    except (ValidationError, services.Conflict) as error:
        messages.error(request, _problem(error))
        return HttpResponseRedirect(back)
    messages.success(request, _decided(decided))
    if decided.resolution == "merged" and decided.outcome_memory_id:
        return HttpResponseRedirect(reverse("review:memory", args=[decided.outcome_memory_id]))
    return HttpResponseRedirect(back)


@require_POST
@login_required
def conflict_bulk(request: HtmxHttpRequest) -> HttpResponse:
    action = request.POST.get("action", "")
    ids = [int(v) for v in request.POST.getlist("ids") if is_whole_number(v) and len(v) <= 18]
    back = return_url(request, reverse("review:conflicts"))
    if action not in ("dismiss", "keep-newer", "keep-older") or not ids:
        Actor.for_user(request.user)
        messages.error(request, "Select one or more pairs, then choose what to do with them.")
        return HttpResponseRedirect(back)
    chosen = MemoryPair.objects.filter(pk__in=ids).values_list("project_id", flat=True)
    actor = reviewer_for(request, list(chosen))
    done, failed = decisions.pairs_resolve(pair_ids=ids, action=action, actor=actor)
    messages.success(request, f"Decided {len(done)} pair{'' if len(done) == 1 else 's'}.")
    for pair_id, why in failed[:5]:
        messages.warning(request, f"Pair {pair_id}: {why}")
    return HttpResponseRedirect(back)


def _decided(pair: MemoryPair) -> str:
    outcome = pair.outcome_memory_id
    return {
        "kept": f"Kept memory {outcome}; the other is superseded by it (restorable).",
        "merged": f"Merged into memory {outcome}; both are superseded by it (restorable).",
        "not_conflict": "Kept both: this pair is not flagged again unless their words change.",
        "rejected": f"Rejected memory {outcome}.",
    }.get(pair.resolution, "Decided.")


def _problem(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return str(error)
