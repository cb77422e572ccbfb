"""How the jobs run: each run recorded, a time budget, parts over ranges of ids."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from policies.decay import decay_memories
from policies.expiry import expire_memories
from policies.models import JobState
from policies.runner import ALL_IDS, id_parts, record_run

pytestmark = pytest.mark.django_db


def test_each_run_is_recorded_for_the_dashboard(project, make_memory, age):
    age([make_memory(project=project)], created=90)
    result = record_run(decay_memories)
    job = JobState.objects.get(name="decay_memories")
    assert job.last_changed == result.total == 1
    assert job.last_complete is True
    assert job.last_finished_at >= job.last_started_at


def test_a_job_stops_between_batches_at_its_time_budget(project, make_memory, age):
    age([make_memory(project=project) for _ in range(3)], created=90)
    result = decay_memories(batch_size=1, seconds=0)
    assert (result.batches, result.finished) == (0, False)
    assert decay_memories(batch_size=1).total == 3


def test_a_job_in_parts_ends_as_the_whole_job_does(project, make_memory, age, state):
    memories = age([make_memory(project=project) for _ in range(9)], created=90)
    age(memories[:3], created=400, expires_at=timezone.now() - timedelta(days=1))
    parts = id_parts(3)
    # Consecutive ranges from the first id to the last possible one: every memory is in one.
    assert [first for first, _ in parts[1:]] == [last for _, last in parts[:-1]]
    assert (parts[0][0], parts[-1][1]) == ALL_IDS
    assert all(sum(first < m.pk <= last for first, last in parts) == 1 for m in memories)
    now = timezone.now()
    changed = [
        (
            expire_memories(now=now, ids=ids).total,
            decay_memories(now=now, ids=ids).total,
        )
        for ids in parts
    ]
    assert sum(expired for expired, _ in changed) == 3
    assert sum(decayed for _, decayed in changed) == 6
    assert all(expired + decayed > 0 for expired, decayed in changed)  # each part did some
    in_parts = state()
    # Done again whole, nothing is left to do.
    assert expire_memories(now=now).total == decay_memories(now=now).total == 0
    assert state() == in_parts


def test_a_range_of_ids_bounds_a_job(project, make_memory, age):
    first, second = age([make_memory(project=project), make_memory(project=project)], created=90)
    assert decay_memories(ids=(first.pk - 1, first.pk)).total == 1
    second.refresh_from_db()
    assert second.decayed_at is None
