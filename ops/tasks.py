"""Lifecycle jobs that span the layers below: gathered for Celery's autodiscovery."""

from __future__ import annotations

from assembly.models import FitOutcome
from assembly.ranking import projects_with_feedback, ranking_fit
from memories.actors import Actor
from policies.runner import JobResult, start, task

__all__ = ["fit_ranking_task"]


def fit_ranking(seconds: float | None = None) -> JobResult:
    """Fit each project's ranking weights to what its agents used (assembly.ranking): the
    weights change only where the fit ranks held-back runs better; what changed counts the
    projects whose weights were adopted."""
    result = start("fit_ranking", seconds)
    actor = Actor.system("fit_ranking")
    for project in projects_with_feedback():
        if result.out_of_time():
            break
        fit = ranking_fit(project=project, actor=actor)
        if fit is not None:
            result.add({project.pk: int(fit.outcome == FitOutcome.ADOPTED)})
    return result


fit_ranking_task = task("ops.fit_ranking", fit_ranking)
