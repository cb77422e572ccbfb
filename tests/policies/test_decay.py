"""Confidence decay: each rule and its exemptions, and two workers at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories import services as memory_services
from memories.models import EventAction, MemoryEvent
from memories.services import uses
from policies.decay import decay_memories
from tests.policies.support import SYSTEM, events, fresh, set_policy

pytestmark = pytest.mark.django_db


def test_an_unused_memory_loses_a_step_once_per_period(project, make_memory, age):
    idle, used, young = (make_memory(project=project) for _ in range(3))
    age([idle], created=100, accessed=40)
    age([used], created=100, accessed=2)
    age([young], created=5)
    start = fresh(idle).confidence
    assert decay_memories().changed == {project.pk: 1}
    assert fresh(idle).confidence == pytest.approx(start - 0.05)
    assert fresh(used).confidence == fresh(young).confidence == start
    (event,) = events(idle, EventAction.DECAYED)
    assert event.changes == {"confidence": [start, pytest.approx(start - 0.05)]}
    assert event.reason == "not given to an agent for 40 days"
    # Within the same period nothing more; a period later, one more step.
    assert decay_memories().total == 0
    later = timezone.now() + timedelta(days=7, minutes=1)
    assert decay_memories(now=later).total == 1
    assert fresh(idle).confidence == pytest.approx(start - 0.10)


def test_approved_and_pinned_memories_are_exempt_unless_the_policy_says_otherwise(
    project, make_memory, age, reviewer_actor
):
    approved, pinned = make_memory(project=project), make_memory(project=project)
    memory_services.memories_approve(memory_ids=[approved.pk], actor=reviewer_actor)
    memory_services.memories_set_pinned(memory_ids=[pinned.pk], pinned=True, actor=SYSTEM)
    age([approved, pinned], created=90)
    assert decay_memories().total == 0
    set_policy(project, decay_exempt_approved=False, decay_exempt_pinned=False)
    assert decay_memories().total == 2


def test_decay_stops_at_zero_and_deactivates_below_the_threshold(project, make_memory, age):
    memory = make_memory(project=project)
    age([memory], created=90, confidence=0.22)
    set_policy(project, decay_step=0.5)
    decay_memories()
    memory = fresh(memory)
    assert memory.confidence == 0.0
    assert memory.active is False
    (event,) = events(memory, EventAction.DECAYED)
    assert event.changes["active"] == [True, False]


def test_global_memories_decay_by_the_default_policy(make_memory, age):
    memory = make_memory(project=None, scope="global")
    age([memory], created=90, active=True)
    assert decay_memories().changed == {None: 1}


@pytest.mark.django_db(transaction=True)
def test_two_decay_workers_at_once_step_each_memory_once(project, make_memory, age, two_at_once):
    memories = age([make_memory(project=project) for _ in range(30)], created=90)
    totals = two_at_once(lambda: decay_memories(batch_size=4).total)
    assert sum(totals) == 30
    assert MemoryEvent.objects.filter(action=EventAction.DECAYED).count() == 30
    assert [fresh(m).confidence for m in memories] == [pytest.approx(0.45)] * 30


def test_decay_counts_the_noted_uses_first(make_memory, age, buffered):
    used, idle = age([make_memory(), make_memory()], created=90, accessed=60)
    uses.record([used.pk])
    decay_memories()
    used.refresh_from_db()
    idle.refresh_from_db()
    assert (used.access_count, used.decayed_at) == (1, None)
    assert idle.decayed_at is not None
