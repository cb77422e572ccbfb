"""Expiry: passed expiry dates deactivate memories, once, with their history."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import EventAction, Memory, MemoryEvent
from policies.expiry import expire_memories

pytestmark = pytest.mark.django_db


def expiring(make_memory, project, count, *, days=-1):
    memories = [make_memory(project=project) for _ in range(count)]
    Memory.objects.filter(pk__in=[m.pk for m in memories]).update(
        expires_at=timezone.now() + timedelta(days=days)
    )
    return memories


def state():
    return sorted(Memory.objects.values_list("id", "active")), sorted(
        MemoryEvent.objects.filter(action=EventAction.EXPIRED).values_list("memory_id", flat=True)
    )


def test_passed_expiry_deactivates_with_one_history_row_each(project, make_memory):
    gone = expiring(make_memory, project, 3)
    later = expiring(make_memory, project, 2, days=5)
    forever = make_memory(project=project, type="pattern", expires_at=None)
    result = expire_memories()
    assert result.changed == {project.pk: 3}
    active = dict(Memory.objects.values_list("id", "active"))
    assert [active[m.pk] for m in gone] == [False] * 3
    assert [active[m.pk] for m in later] == [True] * 2
    assert active[forever.pk] is True
    event = MemoryEvent.objects.get(memory=gone[0], action=EventAction.EXPIRED)
    assert event.changes == {"active": [True, False]}
    assert event.actor_label == "system:expiry"
    assert event.reason.startswith("expired at ")


def test_running_twice_changes_nothing_more(project, make_memory):
    expiring(make_memory, project, 4)
    expire_memories()
    first = state()
    assert expire_memories().total == 0
    assert state() == first


def test_works_through_in_bounded_batches(project, make_memory):
    expiring(make_memory, project, 5)
    result = expire_memories(batch_size=2)
    assert result.batches == 3
    assert result.total == 5
    assert not Memory.objects.filter(active=True, expires_at__lte=timezone.now()).exists()


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_expire_each_memory_once(project, make_memory, two_at_once):
    memories = expiring(make_memory, project, 40)
    totals = [result.total for result in two_at_once(lambda: expire_memories(batch_size=7))]
    assert sum(totals) == 40
    _, events = state()
    assert events == sorted(m.pk for m in memories)


def test_an_expiry_makes_cached_context_stale(
    project, make_memory, django_capture_on_commit_callbacks
):
    from assembly.requests import ContextRequest
    from assembly.services import context_assemble
    from memories.actors import Actor

    (memory,) = expiring(make_memory, project, 1, days=1)
    request = ContextRequest(token_budget=500)
    actor = Actor.system("tests")
    assert context_assemble(project=project, request=request, actor=actor).items
    Memory.objects.filter(pk=memory.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        expire_memories()
    again = context_assemble(project=project, request=request, actor=actor)
    assert again.metadata.cache_hit is False
    assert again.items == []
