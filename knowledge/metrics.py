"""Prometheus metrics of the knowledge layer (exposed by ops.metrics)."""

from __future__ import annotations

from prometheus_client import Counter

JUDGE_QUESTIONS = Counter(
    "memory_conflict_judge_questions",
    "Pairs of memories the rules could not decide that were put to the judge model, by"
    " outcome: answered, cached (answered before, not asked again), timeout, error (the"
    " server failed or could not be reached), bad_answer (not the JSON asked for),"
    " over_budget (the job run's calls were spent). All but answered and cached leave the"
    " pair to the rules.",
    ["outcome"],
)
