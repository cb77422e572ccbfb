"""The beat job that finds repeats and possible conflicts in the store as it is."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from knowledge.models import MemoryPair
from policies.conflicts import JOB, find_conflicts
from policies.models import JobState
from policies.runner import record_run

pytestmark = pytest.mark.django_db

TEN = "Calls to the payments API time out after 10 seconds."


def test_the_job_finds_the_pairs_written_before_comparison_existed(project, make_memory):
    memories = [make_memory(project=project, content=TEN.replace("10", str(n))) for n in (10, 30)]
    make_memory(project=project, content="Invoices are rendered by WeasyPrint.")
    MemoryPair.objects.all().delete()  # as a store from before this job
    result = record_run(find_conflicts, batch_size=2)
    pair = MemoryPair.objects.get()
    assert [pair.first_id, pair.second_id] == [m.pk for m in memories]
    assert (pair.kind, pair.found_by) == ("conflict", "system:find_conflicts")
    assert result.total == 1
    assert result.batches == 3  # two batches of memories, then the end of the walk
    state = JobState.objects.get(name=JOB)
    assert state.cursor == 0  # finished: the next run starts over
    assert state.last_changed == 1
    # Again: nothing new, nothing twice.
    assert find_conflicts().total == 0
    assert MemoryPair.objects.count() == 1


def test_a_batch_is_a_bounded_number_of_statements(project, make_memory):
    for n in range(40):
        make_memory(project=project, content=TEN.replace("10", str(n + 1)))
    for batch in (10, 40):
        JobState.objects.filter(name=JOB).delete()
        with CaptureQueriesContext(connection) as queries:
            find_conflicts(batch_size=batch, seconds=None)
        per_batch = len(queries) / (40 / batch + 1)
        assert per_batch <= 14, [str(q["sql"])[:60] for q in queries]


def test_the_job_stops_at_its_time_budget_and_goes_on_next_time(project, make_memory):
    for n in range(6):
        make_memory(project=project, content=f"Deploy step {n} needs approval.")
    first = find_conflicts(batch_size=2, seconds=0)
    assert not first.finished
    assert first.batches == 0
    second = find_conflicts(batch_size=2)
    assert second.finished
