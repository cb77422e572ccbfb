"""Finding repeats and possible conflicts in the store as it is: the memories written before
a comparison existed, and those whose neighbours changed since (knowledge.pairs compares each
memory when it is written; this walk compares every active memory again, a batch at a time).
"""

from __future__ import annotations

from django.db import transaction

from knowledge import pairs
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
    while not result.out_of_time():
        ids = list(
            Memory.objects.filter(active=True, id__gt=after)
            .order_by("id")
            .values_list("id", flat=True)[:batch_size]
        )
        with transaction.atomic():
            # The walk reads open pairs again even where their words are the same: what
            # their neighbourhood shares (knowledge.pairs) may have changed since.
            counts = pairs.find(ids, found_by=f"system:{JOB}", recheck=True) if ids else {}
            JobState.objects.filter(name=JOB).update(cursor=ids[-1] if ids else 0)
            history.written(counts)
        result.add(counts)
        if not ids:
            break
        after = ids[-1]
    return result


find_conflicts_task = task("policies.find_conflicts", find_conflicts)
