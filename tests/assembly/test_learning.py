"""Learning the ranking from what agents used: a fit is adopted only when it ranks held-back
runs better, and what it replaced can be restored."""

from __future__ import annotations

import random

import pytest

from assembly import learning
from assembly.learning import Judged, fit, fit_and_check, informative, quality
from assembly.models import FitOutcome, RankingFit
from assembly.packing import Weights, weights_in_force
from assembly.ranking import ranking_fit, ranking_restore
from memories import services
from memories.actors import Actor
from ops.tasks import fit_ranking

SYSTEM = Actor.system("tests")
pytestmark = pytest.mark.django_db


def judged(rng: random.Random, *, used_by: str, size: int = 8) -> list[Judged]:
    """A run's given list: every part random; the agent used the two memories highest in
    part ``used_by``."""
    parts = [
        {
            "tag_match": 1.0,
            "scope": rng.random(),
            "text_relevance": rng.random(),
            "path_text": rng.random(),
            "quality": rng.random(),
            "recency": 1.0,
        }
        for _ in range(size)
    ]
    best = sorted(range(size), key=lambda i: -parts[i][used_by])[:2]
    return [Judged(p, i in best) for i, p in enumerate(parts)]


def test_a_fit_learns_which_part_says_what_agents_use():
    rng = random.Random(1)
    runs = [judged(rng, used_by="path_text") for _ in range(60)]
    start = Weights()
    fitted = fit(runs, start)
    assert quality(runs, fitted) > quality(runs, start) + 0.1
    assert fitted.path > 0
    assert fitted.path >= max(fitted.scope, fitted.text, fitted.quality)
    checked = fit_and_check(runs, start)
    assert checked.better
    assert checked.held_after > checked.held_before
    assert (checked.trained, checked.held) == (40, 20)


def test_a_fit_that_does_not_rank_held_back_runs_better_is_not_adopted():
    """Fitted on runs whose agents used what the path says, checked on runs whose agents used
    the most confident: it cannot win there, and the weights in force stay."""
    rng = random.Random(2)
    runs = [judged(rng, used_by="path_text") for _ in range(40)]
    runs += [judged(rng, used_by="quality") for _ in range(20)]
    start = Weights(scope=2, text=0.5, path=0.0, quality=1.0)
    checked = fit_and_check(runs, start)
    assert checked.train_after > checked.train_before  # it did learn the older runs
    assert not checked.better
    assert "Kept the weights in force" in checked.why()


@pytest.mark.parametrize(
    ("gains", "adopted"),
    [
        ([0.006] * 20, True),  # every held-back run gains: surely a win
        ([0.001] * 10 + [0.011] * 10, False),  # the same mean, half of it from half the runs
        ([0.0] * 18 + [0.06] * 2, False),  # two runs make the whole gain
    ],
)
def test_a_fit_is_adopted_only_when_resampled_held_back_runs_still_gain_enough(gains, adopted):
    """The mean gain on the held-back runs passes MIN_GAIN in each case; only a gain that
    19 resamplings of 20 still put at MIN_GAIN or more counts (a gain merely above 0 was
    seen to vanish on the tasks that came after)."""
    rng = random.Random(3)
    runs = [judged(rng, used_by="path_text") for _ in range(60)]
    start = Weights(scope=2, text=0.5, path=0.0, quality=1.0)

    def judge(weights: Weights) -> list[float]:
        base = [0.5] * len(gains)
        return base if weights == start else [b + g for b, g in zip(base, gains, strict=True)]

    checked = fit_and_check(runs, start, judge)
    assert checked.after != start
    assert checked.train_after > checked.train_before
    assert checked.held_after >= checked.held_before + learning.MIN_GAIN
    assert checked.better is adopted
    assert ("Adopted" in checked.why()) is adopted


def test_only_runs_with_used_and_unused_memories_teach_the_order():
    used, unused = Judged({"quality": 1.0}, True), Judged({"quality": 0.0}, False)
    assert informative([[used], [unused], [used, unused], []]) == [[used, unused]]


def give(run, memories, used_by):
    """Record what ``run`` was given (each memory's parts) and its outcome naming the two
    memories highest in part ``used_by``."""
    rng = random.Random(run.pk)
    parts = {
        m.pk: {"tag_match": 1.0, "path_text": rng.random(), "quality": rng.random()}
        for m in memories
    }
    services.run_give_memories(run=run, ranked=[(pk, 1.0, p) for pk, p in parts.items()])
    best = sorted(parts, key=lambda pk: -parts[pk][used_by])[:2]
    services.run_record_outcome(run=run, outcome="succeeded", actor=SYSTEM, used_memory_ids=best)


@pytest.fixture
def taught(project, make_memory, make_run):
    """30 runs whose agents used what the write scope's words pointed at."""
    memories = [make_memory(project=project, content=f"Note {n} of many.") for n in range(6)]
    for _ in range(30):
        give(make_run(project=project), memories, "path_text")
    project.policy.weight_path = 0.0
    project.policy.save()
    return project


def test_the_job_adopts_a_better_fit_and_the_old_weights_come_back_on_restore(taught):
    before = weights_in_force(taught.policy)
    result = fit_ranking()
    assert result.changed == {taught.pk: 1}
    fitted = RankingFit.objects.get(project=taught)
    assert fitted.outcome == FitOutcome.ADOPTED
    assert fitted.held_after >= fitted.held_before + learning.MIN_GAIN
    assert fitted.weights_before == learning.as_dict(before)
    taught.policy.refresh_from_db()
    assert weights_in_force(taught.policy) == Weights(**fitted.weights_after)
    assert taught.policy.weight_path > 0
    # Nothing new since: the job leaves it alone.
    assert ranking_fit(project=taught, actor=SYSTEM) is None
    restored = ranking_restore(fit=fitted, actor=Actor.system("person"))
    taught.policy.refresh_from_db()
    assert weights_in_force(taught.policy) == before
    assert restored.outcome == FitOutcome.RESTORED
    assert restored.weights_before == fitted.weights_after


def test_too_few_runs_with_feedback_fit_nothing(project, make_memory, make_run):
    memories = [make_memory(project=project, content=f"Note {n} of few.") for n in range(4)]
    for _ in range(learning.MIN_RUNS - 1):
        give(make_run(project=project), memories, "path_text")
    assert ranking_fit(project=project, actor=SYSTEM) is None
    assert not RankingFit.objects.exists()


def test_a_fit_that_was_not_adopted_cannot_be_restored(project):
    from django.core.exceptions import ValidationError

    kept = RankingFit.objects.create(
        project=project,
        outcome=FitOutcome.KEPT,
        weights_before=learning.as_dict(Weights()),
        weights_after=learning.as_dict(Weights(path=3.0)),
        reason="Kept.",
        actor="system:tests",
    )
    with pytest.raises(ValidationError):
        ranking_restore(fit=kept, actor=SYSTEM)
    project.policy.refresh_from_db()
    assert weights_in_force(project.policy) == Weights()


def test_held_back_runs_are_asked_again_for_real_when_they_kept_their_requests(
    project, make_memory, make_run, monkeypatch
):
    """Runs given memories by the assembly keep their request; the fit's check assembles
    each held-back one again with the old and the new weights."""
    from assembly import ranking
    from assembly.requests import ContextRequest
    from assembly.services import context_assemble

    for n in range(6):
        make_memory(project=project, tags=[f"src/app/part{n}/**"], content=f"Part {n} note.")
    for number in range(learning.MIN_RUNS + 4):
        run = make_run(project=project)
        result = context_assemble(
            project=project,
            request=ContextRequest(
                token_budget=500, write_scope=(f"src/app/part{number % 6}/x.py",), run_id=run.pk
            ),
            actor=SYSTEM,
        )
        used = [item.id for item in result.items if item.score_parts["path_text"] > 0]
        services.run_record_outcome(
            run=run, outcome="succeeded", actor=SYSTEM, used_memory_ids=used[:1]
        )
    run.refresh_from_db()
    assert run.context_request["write_scope"] == [f"src/app/part{number % 6}/x.py"]
    asked = []
    real = ranking.context_ranked

    def spy(**kwargs):
        asked.append(kwargs["weights"])
        return real(**kwargs)

    monkeypatch.setattr(ranking, "context_ranked", spy)
    fit = ranking_fit(project=project, actor=SYSTEM)
    assert fit is not None
    held = learning.held_back(learning.MIN_RUNS + 4)
    assert asked[:held] == [Weights(**fit.weights_before)] * held
    changed = fit.weights_after != fit.weights_before
    assert asked[held:] == ([Weights(**fit.weights_after)] * held if changed else [])
