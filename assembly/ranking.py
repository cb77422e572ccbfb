"""A project's ranking weights learnt from its own runs (assembly.learning), adopted only when
they rank held-back runs better, and restorable."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from assembly.learning import (
    MIN_RUNS,
    Judged,
    as_dict,
    fit_and_check,
    held_back,
    informative,
    ndcg,
)
from assembly.models import FitOutcome, RankingFit
from assembly.packing import WEIGHT_COLUMNS, Weights, weights_in_force
from assembly.services import context_ranked
from memories.actors import Actor
from memories.models import MemoryPolicy, Project, Run, RunMemory

# The newest runs with feedback a fit reads.
MAX_RUNS = 1000


@dataclass(frozen=True)
class Feedback:
    """A finished run that said what its agent used: what it was given (in rank order, with
    score parts) and whether the agent used each; what it asked for; what it used."""

    given: list[Judged]
    request: dict[str, Any] | None
    used: frozenset[int]


def _feedback(project: Project) -> tuple[list[Feedback], int | None]:
    """The project's newest runs with feedback, oldest first, and the newest run's id."""
    runs = list(
        Run.objects.filter(project=project, used_memory_ids__isnull=False)
        .exclude(status="running")
        .order_by("-finished_at", "-id")
        .values_list("id", "context_request", "used_memory_ids")[:MAX_RUNS]
    )
    given: dict[int, list[Judged]] = {run_id: [] for run_id, *_ in reversed(runs)}
    rows = (
        RunMemory.objects.filter(run_id__in=given)
        .exclude(parts={})
        .order_by("run_id", "rank")
        .values_list("run_id", "parts", "used")
    )
    for run_id, parts, used in rows:
        given[run_id].append(Judged(parts, bool(used)))
    asked = {run_id: (request, frozenset(used or ())) for run_id, request, used in runs}
    return [Feedback(judged, *asked[run_id]) for run_id, judged in given.items() if judged], (
        runs[0][0] if runs else None
    )


def _asked_again(project: Project, held: Sequence[Feedback]) -> Callable[[Weights], list[float]]:
    """How well weights rank the held-back runs for real: each run's request assembled again
    with them, its nDCG@10 against what its agent used (a memory it was never given counts
    as unused, so new weights must win against the odds)."""

    def quality(weights: Weights) -> list[float]:
        scores = []
        for run in held:
            assert run.request is not None
            ranked = context_ranked(project=project, recorded=run.request, weights=weights)
            gains = [1.0 if memory_id in run.used else 0.0 for memory_id in ranked]
            ideal = [1.0] * min(len(run.used), 10)
            scores.append(ndcg(gains, ideal))
        return scores

    return quality


def ranking_fit(*, project: Project, actor: Actor, force: bool = False) -> RankingFit | None:
    """Fit the project's weights to what its agents used; adopt them only when they rank the
    held-back runs better. None when there is nothing new to learn from (no run since the
    last fit, unless ``force``) or too little (fewer than MIN_RUNS runs naming used and
    unused memories).

    The held-back runs are ranked for real, their requests assembled again with each set of
    weights, when every one of them kept its request; otherwise (runs given memories by
    another way) by re-ranking what each was given."""
    feedback, newest = _feedback(project)
    last = RankingFit.objects.filter(project=project).exclude(outcome=FitOutcome.RESTORED).first()
    if newest is None or (not force and last is not None and last.newest_run_id == newest):
        return None
    kept = [run for run in feedback if informative([run.given])]
    if len(kept) < MIN_RUNS:
        return None
    held = kept[-held_back(len(kept)) :]
    judge = _asked_again(project, held) if all(run.request is not None for run in held) else None
    with transaction.atomic():
        policy = MemoryPolicy.objects.select_for_update().get(project=project)
        project.policy = policy
        fitted = fit_and_check([run.given for run in kept], weights_in_force(policy), judge)
        outcome = FitOutcome.ADOPTED if fitted.better else FitOutcome.KEPT
        if fitted.better:
            _set_weights(policy, fitted.after)
        return RankingFit.objects.create(
            project=project,
            outcome=outcome,
            weights_before=as_dict(fitted.before),
            weights_after=as_dict(fitted.after),
            trained=fitted.trained,
            held=fitted.held,
            train_before=fitted.train_before,
            train_after=fitted.train_after,
            held_before=fitted.held_before,
            held_after=fitted.held_after,
            surely=fitted.surely,
            newest_run_id=newest,
            reason=fitted.why(),
            actor=actor.label,
        )


def ranking_restore(*, fit: RankingFit, actor: Actor) -> RankingFit:
    """Put back the weights that were in force before ``fit`` (recorded as a fit of its own,
    so that this too can be undone)."""
    if fit.outcome != FitOutcome.ADOPTED:
        raise ValidationError({"fit": "Only an adopted fit changed the weights; nothing to undo."})
    with transaction.atomic():
        policy = MemoryPolicy.objects.select_for_update().get(project=fit.project_id)
        now_in_force = weights_in_force(policy)
        restored = Weights(**fit.weights_before)
        _set_weights(policy, restored)
        return RankingFit.objects.create(
            project_id=fit.project_id,
            outcome=FitOutcome.RESTORED,
            weights_before=as_dict(now_in_force),
            weights_after=as_dict(restored),
            newest_run_id=fit.newest_run_id,
            reason=f"Restored the weights in force before the fit of "
            f"{fit.created_at:%Y-%m-%d %H:%M} UTC.",
            actor=actor.label,
        )


def _set_weights(policy: MemoryPolicy, weights: Weights) -> None:
    for name, column in WEIGHT_COLUMNS.items():
        setattr(policy, column, getattr(weights, name))
    policy.full_clean()
    policy.save(update_fields=list(WEIGHT_COLUMNS.values()))


def projects_with_feedback() -> Iterator[Project]:
    """The projects with at least one finished run that named what its agent used."""
    ids = (
        Run.objects.filter(used_memory_ids__isnull=False)
        .exclude(status="running")
        .values("project_id")
        .distinct()
    )
    yield from Project.objects.filter(pk__in=ids).select_related("policy").order_by("pk")


def ranking_fit_all(*, actor: Actor) -> dict[str, int]:
    """Fit every project with new feedback; how many were adopted and kept."""
    counts = {"fitted": 0, "adopted": 0}
    for project in projects_with_feedback():
        fit = ranking_fit(project=project, actor=actor)
        if fit is not None:
            counts["fitted"] += 1
            counts["adopted"] += fit.outcome == FitOutcome.ADOPTED
    return counts
