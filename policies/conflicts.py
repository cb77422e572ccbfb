"""Finding repeats and possible conflicts in the store as it is: the memories written before
a comparison existed, and those whose neighbours changed since (knowledge.pairs compares each
memory when it is written; this walk compares every active memory again, a batch at a time).
"""

from __future__ import annotations

from collections import Counter

from django.db import transaction

from knowledge import judge, judged, pairs
from memories import history
from memories.models import Memory
from policies.models import JobState
from policies.runner import JobResult, start, task

JOB = "find_conflicts"


def find_conflicts(*, batch_size: int = 200, seconds: float | None = None) -> JobResult:
    """Compare the active memories, a batch of ``batch_size`` at a time in id order from
    where the last run stopped, with their candidates (knowledge.pairs: bounded index
    lookups), keeping the pairs found. A finished walk starts over at the next run."""
    result = start(JOB, seconds)
    after = JobState.objects.get_or_create(name=JOB)[0].cursor
    tally: Counter[str] = Counter()
    asker = judge.configured()
    budget = judge.Budget.from_settings() if asker is not None else None
    found_by = f"system:{JOB}"
    while not result.out_of_time():
        ids = list(
            Memory.objects.filter(active=True, id__gt=after)
            .order_by("id")
            .values_list("id", flat=True)[:batch_size]
        )
        undecided: list[judged.Undecided] = []
        with transaction.atomic():
            # The walk reads open pairs again even where their words are the same: what
            # their neighbourhood shares (knowledge.pairs) may have changed since.
            counts = (
                pairs.find(ids, found_by=found_by, recheck=True, tally=tally, undecided=undecided)
                if ids
                else {}
            )
            JobState.objects.filter(name=JOB).update(cursor=ids[-1] if ids else 0)
            history.written(counts)
        result.add(counts)
        if asker is not None and budget is not None and undecided:
            # Asked outside the transaction (a model may take seconds), kept in one of its own.
            answers = asker.decide([u.question() for u in undecided], budget=budget)
            tally["asked of the judge"] += len(answers)
            with transaction.atomic():
                judged_counts = judged.keep_answers(undecided, answers, found_by=found_by)
                history.written(judged_counts)
            result.add(judged_counts)
            tally["opened by the judge"] += sum(judged_counts.values())
        if not ids:
            break
        after = ids[-1]
    result.report = dict(tally)
    return result


find_conflicts_task = task("policies.find_conflicts", find_conflicts)
