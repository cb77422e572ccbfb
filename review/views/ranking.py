"""A project's ranking: the weights in force, each fit to what its agents used and why it was
adopted or not (assembly.ranking), and, for its maintainers, restoring what a fit replaced."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from assembly.learning import MIN_GAIN, MIN_RUNS, PART_OF
from assembly.models import RankingFit
from assembly.packing import weights_in_force
from assembly.ranking import ranking_restore as restore_weights
from memories import roles
from memories.actors import Actor
from memories.models import Project, Role
from review.views.access import visible_project
from review.views.parts import HtmxHttpRequest

FITS_SHOWN = 20
# Each weight in words, with the part of the score it multiplies.
WEIGHTS = {
    "scope": "Write-scope fit (how specifically its tags name the files)",
    "path": "Words of the write scope (folders and file names) in the memory",
    "text": "Words of the intent in the memory (BM25)",
    "semantic": "Meaning close to the task's",
    "entities": "Entities the request names",
    "quality": "Confidence x relevance score",
    "recency": "Recency",
}


@require_GET
@login_required
def ranking(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project = visible_project(request, slug, Project.objects.select_related("policy"))
    in_force = weights_in_force(project.policy)
    fits = list(RankingFit.objects.filter(project=project)[:FITS_SHOWN])
    return render(
        request,
        "review/ranking.html",
        {
            "project": project,
            "weights": [
                (name, WEIGHTS[name], getattr(in_force, name), PART_OF[name]) for name in WEIGHTS
            ],
            "fits": [(fit, _changes(fit)) for fit in fits],
            "latest": fits[0] if fits else None,
            "may_restore": roles.may(request.user, project.pk, Role.MAINTAINER),
            "min_runs": MIN_RUNS,
            "min_gain": MIN_GAIN,
        },
    )


def _changes(fit: RankingFit) -> list[tuple[str, float, float]]:
    """The weights a fit changed: (name, before, after)."""
    return [
        (name, fit.weights_before.get(name, 0.0), fit.weights_after.get(name, 0.0))
        for name in WEIGHTS
        if fit.weights_before.get(name) != fit.weights_after.get(name)
    ]


@require_POST
@login_required
def ranking_restore(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Put back the weights an adopted fit replaced (its maintainers only)."""
    project = visible_project(request, slug)
    fit = get_object_or_404(RankingFit.objects.filter(project=project), pk=pk)
    if not roles.may(request.user, project.pk, Role.MAINTAINER):
        raise PermissionDenied("Only the project's maintainers may change its ranking weights.")
    try:
        restore_weights(fit=fit, actor=Actor.for_user(request.user))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "The weights in force before that fit are back.")
    return HttpResponseRedirect(reverse("review:ranking", args=[project.slug]))
