"""A run's scratch memories are archived after the run, unless promoted."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services as memory_services
from memories.models import EventAction, RunStatus
from policies.scratch import clear_run_scratch
from tests.policies.support import SYSTEM, events, fresh, set_policy

pytestmark = pytest.mark.django_db


def test_a_finished_runs_scratch_is_archived_unless_promoted(project, make_run, make_memory):
    finished, running = make_run(project=project), make_run(project=project)
    scratch = [
        make_memory(project=project, scope="run", source_run=run) for run in (finished, running)
    ]
    promoted = make_memory(project=project, scope="run", source_run=finished)
    memory_services.memories_promote(memory_ids=[promoted.pk], actor=SYSTEM)
    ended = timezone.now() - timedelta(hours=25)
    type(finished).objects.filter(pk=finished.pk).update(
        status=RunStatus.SUCCEEDED, finished_at=ended
    )
    assert clear_run_scratch().total == 1
    gone, kept = (fresh(m) for m in scratch)
    assert (gone.active, gone.tier, gone.archived_at is not None) == (False, "frozen", True)
    assert (kept.active, fresh(promoted).active) == (True, True)
    (event,) = events(gone, EventAction.CLEARED)
    assert event.reason == f"scratch of run {finished.external_id}, which succeeded"
    assert clear_run_scratch().total == 0
    memory_services.memories_restore(memory_ids=[gone.pk], actor=SYSTEM)
    assert (fresh(gone).active, fresh(gone).archived_at) == (True, None)


def test_a_runs_scratch_is_kept_for_the_policys_hours(project, make_run, make_memory):
    run = make_run(project=project)
    make_memory(project=project, scope="run", source_run=run)
    type(run).objects.filter(pk=run.pk).update(
        status=RunStatus.FAILED, finished_at=timezone.now() - timedelta(hours=2)
    )
    assert clear_run_scratch().total == 0
    set_policy(project, scratch_keep_hours=1)
    assert clear_run_scratch().total == 1
