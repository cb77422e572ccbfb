"""Every job that changes what an agent can be given announces it once its batch commits
(memories.hooks), so the assembly cache forgets the project; tiers, bookkeeping only,
announce nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, RunStatus
from policies.compression import compress_memories
from policies.consolidation import consolidate_memories
from policies.decay import decay_memories
from policies.eviction import evict_memories
from policies.expiry import expire_memories
from policies.scratch import clear_run_scratch
from policies.staleness import memories_mark_changed
from policies.tiers import update_tiers
from tests.policies.support import SYSTEM, set_policy
from tests.policies.test_compression import LONG

pytestmark = pytest.mark.django_db


def expiry(project, make_memory, make_run, age):
    memory = make_memory(project=project)
    Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() - timedelta(days=1))
    return expire_memories


def decay(project, make_memory, make_run, age):
    age([make_memory(project=project)], created=100, accessed=40)
    return decay_memories


def scratch(project, make_memory, make_run, age):
    run = make_run(project=project)
    make_memory(project=project, scope="run", source_run=run)
    type(run).objects.filter(pk=run.pk).update(
        status=RunStatus.SUCCEEDED, finished_at=timezone.now() - timedelta(hours=25)
    )
    return clear_run_scratch


def eviction(project, make_memory, make_run, age):
    for _ in range(3):
        make_memory(project=project)
    set_policy(project, max_items=1)
    return evict_memories


def compression(project, make_memory, make_run, age):
    age([make_memory(project=project, content=LONG)], created=100)
    set_policy(project, compress_min_tokens=20)
    return compress_memories


def consolidation(project, make_memory, make_run, age):
    note = "Always lock the invoice row before updating its total, or two workers lose updates."
    make_memory(project=project, content=note)
    make_memory(project=project, content=note + " ")
    return consolidate_memories


def staleness(project, make_memory, make_run, age):
    make_memory(project=project, tags=["src/core/**"])
    return lambda: memories_mark_changed(
        project=project, paths=["src/core/db.py"], ref="abc123", actor=SYSTEM
    )


@pytest.mark.parametrize(
    "scenario", [expiry, decay, scratch, eviction, compression, consolidation, staleness]
)
def test_a_job_announces_the_projects_it_changed(
    scenario, project, make_memory, make_run, age, heard, django_capture_on_commit_callbacks
):
    job = scenario(project, make_memory, make_run, age)
    heard.clear()
    with django_capture_on_commit_callbacks(execute=True):
        job()
    assert project.pk in set().union(*(change.project_ids for change in heard))


def test_tiers_are_bookkeeping_and_announce_nothing(
    project, make_memory, age, heard, django_capture_on_commit_callbacks
):
    age([make_memory(project=project)], created=100, accessed=60)
    heard.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert update_tiers().total == 1
    assert heard == []
