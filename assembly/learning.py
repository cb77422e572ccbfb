"""Learning the ranking weights from what agents used (pure).

A run records what it was given with each item's score parts (assembly.packing.score); its
outcome may name the memories the agent actually used. From such runs a project's weights
are fitted to rank the used memories first: coordinate ascent on the mean nDCG@10 of the
given lists re-ranked by the weights (write-scope matches still first), over a grid of round
values per weight. A plain classifier of "used" fits a different goal than the ranking's,
and in trials lost quality; ascent on the ranking's own measure did not.

A fit is only worth adopting when it ranks runs it never saw better than the weights in
force: the runs are split in time (the newest third held back), and the fitted weights must
win there by MIN_GAIN, surely (a bootstrap of the held-back runs still shows a gain of
MIN_GAIN or more 19 times in 20), and not lose on the runs they were fitted on. A gain that
is only surely above 0 was seen to vanish on the tasks that came after.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace

from assembly.packing import Weights

# The score parts each weight multiplies (assembly.packing.score).
PART_OF = {
    "scope": "scope",
    "entities": "entities",
    "text": "text_relevance",
    "path": "path_text",
    "semantic": "semantic",
    "quality": "quality",
    "recency": "recency",
}
GRID = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
MAX_PASSES = 4
MIN_GAIN = 0.005
HELD_BACK = 1 / 3
# At least this many runs with feedback (used and unused memories both named) to fit.
MIN_RUNS = 20


@dataclass(frozen=True)
class Judged:
    """A memory a run was given: its score parts then, and whether the agent used it."""

    parts: dict[str, float]
    used: bool


def informative(runs: Sequence[Sequence[Judged]]) -> list[Sequence[Judged]]:
    """The runs that say something about the order: some given memory used, some not."""
    return [run for run in runs if any(j.used for j in run) and not all(j.used for j in run)]


def score(parts: dict[str, float], weights: Weights) -> float:
    return sum(getattr(weights, name) * parts.get(part, 0.0) for name, part in PART_OF.items())


def reranked(run: Sequence[Judged], weights: Weights) -> list[Judged]:
    """The given list in the order ``weights`` rank it: write-scope matches first, then by
    score (ties keep the order given)."""
    order = sorted(
        range(len(run)),
        key=lambda i: (-run[i].parts.get("tag_match", 0.0), -score(run[i].parts, weights), i),
    )
    return [run[i] for i in order]


def ndcg(gains: Sequence[float], ideal: Sequence[float]) -> float:
    """nDCG@10 of gains in ranked order, against the best order of ``ideal``."""

    def dcg(values: Sequence[float]) -> float:
        return sum(value / math.log2(i + 2) for i, value in enumerate(values[:10]))

    best = dcg(sorted(ideal, reverse=True))
    return dcg(gains) / best if best else 0.0


def ndcg_at_10(run: Sequence[Judged], weights: Weights) -> float:
    """nDCG@10 of a run's given list re-ranked by ``weights``, used memories counting 1."""
    gains = [1.0 if j.used else 0.0 for j in reranked(run, weights)]
    return ndcg(gains, [1.0 if j.used else 0.0 for j in run])


def quality(runs: Sequence[Sequence[Judged]], weights: Weights) -> float:
    """The mean nDCG@10 of the runs re-ranked by ``weights`` (0 without runs)."""
    return sum(ndcg_at_10(run, weights) for run in runs) / len(runs) if runs else 0.0


def fit(runs: Sequence[Sequence[Judged]], start: Weights) -> Weights:
    """Coordinate ascent from ``start``: each weight in turn takes the grid value that ranks
    ``runs`` best (a tie keeps the current one), until a pass changes nothing."""
    current, best = start, quality(runs, start)
    for _ in range(MAX_PASSES):
        changed = False
        for field in fields(Weights):
            for value in GRID:
                trial = replace(current, **{field.name: value})
                measured = quality(runs, trial)
                if measured > best + 1e-9:
                    current, best, changed = trial, measured, True
        if not changed:
            break
    return current


@dataclass(frozen=True)
class Fitted:
    """A fit and the figures that decide whether it is adopted: the mean nDCG@10 of the runs
    it was fitted on and of the held-back ones, with the weights before and after, and
    ``surely``, the gain on the held-back runs that a resampling of them still shows 19
    times in 20 (the 5th percentile of their mean gain)."""

    before: Weights
    after: Weights
    trained: int
    held: int
    train_before: float
    train_after: float
    held_before: float
    held_after: float
    surely: float = 0.0

    @property
    def better(self) -> bool:
        return (
            self.after != self.before
            and self.held_after >= self.held_before + MIN_GAIN
            and self.surely >= MIN_GAIN
            and self.train_after >= self.train_before
        )

    def why(self) -> str:
        if self.after == self.before:
            return "The weights in force already rank the runs best."
        figures = (
            f"held-back runs {self.held_before:.3f} -> {self.held_after:.3f} nDCG@10"
            f" (fitted on {self.trained}, checked on {self.held}; at least"
            f" {self.surely:+.3f} in 19 resamplings of 20)"
        )
        if self.better:
            return f"Adopted: {figures}."
        return (
            f"Kept the weights in force: {figures}; a fit must win by {MIN_GAIN} and surely"
            f" (a gain of {MIN_GAIN} or more in 19 resamplings of 20) to count."
        )


def surely(gains: Sequence[float], *, resamplings: int = 1000) -> float:
    """The 5th percentile of the mean of ``gains`` resampled with replacement (a seeded,
    repeatable bootstrap): a gain this size or more is no accident of which runs were held
    back."""
    if not gains:
        return 0.0
    rng = random.Random(0)
    count = len(gains)
    means = sorted(
        sum(gains[rng.randrange(count)] for _ in range(count)) / count for _ in range(resamplings)
    )
    return round(means[resamplings // 20], 6)


def held_back(count: int) -> int:
    """How many of ``count`` runs (the newest) a fit is checked on."""
    return max(1, round(count * HELD_BACK))


def fit_and_check(
    runs: Sequence[Sequence[Judged]],
    current: Weights,
    judge: Callable[[Weights], list[float]] | None = None,
) -> Fitted:
    """Fit on the older runs (oldest first in ``runs``), check on the newest third: by
    ``judge`` when given (each held-back run's nDCG@10 when ranked for real with the
    weights), else by re-ranking what they were given."""
    held = held_back(len(runs))
    train, check = runs[:-held], runs[-held:]
    after = fit(train, current)

    def checked(weights: Weights) -> list[float]:
        if judge is not None:
            return judge(weights)
        return [ndcg_at_10(run, weights) for run in check]

    before_scores = checked(current)
    after_scores = before_scores if after == current else checked(after)
    return Fitted(
        before=current,
        after=after,
        trained=len(train),
        held=len(check),
        train_before=round(quality(train, current), 6),
        train_after=round(quality(train, after), 6),
        held_before=round(sum(before_scores) / len(before_scores), 6),
        held_after=round(sum(after_scores) / len(after_scores), 6),
        surely=surely([a - b for a, b in zip(after_scores, before_scores, strict=True)]),
    )


def as_dict(weights: Weights) -> dict[str, float]:
    return {name: float(value) for name, value in asdict(weights).items()}
