"""A project's ranking weights learnt from its own runs (assembly.learning), adopted only when
they rank held-back runs better, and restorable."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields

from django.core.exceptions import ValidationError
from django.db import transaction

from assembly.learning import MIN_RUNS, Judged, as_dict, fit_and_check, informative
from assembly.models import FitOutcome, RankingFit
from assembly.packing import Weights
from memories.actors import Actor
from memories.models import MemoryPolicy, Project, Run, RunMemory

# The newest runs with feedback a fit reads.
MAX_RUNS = 1000
WEIGHT_FIELDS = {field.name: f"weight_{field.name}" for field in fields(Weights)}


def weights_in_force(policy: MemoryPolicy) -> Weights:
    return Weights(**{name: getattr(policy, column) for name, column in WEIGHT_FIELDS.items()})


def _feedback(project: Project) -> tuple[list[list[Judged]], int | None]:
    """The project's newest runs with feedback, oldest first, as what each was given (in
    rank order, with score parts) and whether the agent used it; and the newest run's id."""
    runs = list(
        Run.objects.filter(project=project, used_memory_ids__isnull=False)
        .exclude(status="running")
        .order_by("-finished_at", "-id")
        .values_list("id", flat=True)[:MAX_RUNS]
    )
    given: dict[int, list[Judged]] = {run_id: [] for run_id in reversed(runs)}
    rows = (
        RunMemory.objects.filter(run_id__in=runs)
        .exclude(parts={})
        .order_by("run_id", "rank")
        .values_list("run_id", "parts", "used")
    )
    for run_id, parts, used in rows:
        given[run_id].append(Judged(parts, bool(used)))
    return [judged for judged in given.values() if judged], (runs[0] if runs else None)


def ranking_fit(*, project: Project, actor: Actor, force: bool = False) -> RankingFit | None:
    """Fit the project's weights to what its agents used; adopt them only when they rank the
    held-back runs better. None when there is nothing new to learn from (no run since the
    last fit, unless ``force``) or too little (fewer than MIN_RUNS runs naming used and
    unused memories)."""
    given, newest = _feedback(project)
    last = RankingFit.objects.filter(project=project).exclude(outcome=FitOutcome.RESTORED).first()
    if newest is None or (not force and last is not None and last.newest_run_id == newest):
        return None
    runs = informative(given)
    if len(runs) < MIN_RUNS:
        return None
    with transaction.atomic():
        policy = MemoryPolicy.objects.select_for_update().get(project=project)
        fitted = fit_and_check(runs, weights_in_force(policy))
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
    for name, column in WEIGHT_FIELDS.items():
        setattr(policy, column, getattr(weights, name))
    policy.full_clean()
    policy.save(update_fields=list(WEIGHT_FIELDS.values()))


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
