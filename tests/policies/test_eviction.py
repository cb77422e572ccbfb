"""Eviction: a project over its limits sheds its lowest-value memories."""

from __future__ import annotations

import pytest

from memories import services as memory_services
from memories.models import EventAction, Memory, MemoryEvent
from policies.eviction import evict_memories
from tests.policies.support import SYSTEM, events, fresh, set_policy

pytestmark = pytest.mark.django_db


def test_a_project_over_its_limit_archives_its_lowest_value_memories(project, make_memory, age):
    memories = [make_memory(project=project) for _ in range(6)]
    for rank, memory in enumerate(memories):
        age([memory], created=300, accessed=200 - rank * 30, confidence=0.3 + rank * 0.1)
    memory_services.memories_set_pinned(memory_ids=[memories[0].pk], pinned=True, actor=SYSTEM)
    set_policy(project, max_items=3)
    assert evict_memories().changed == {project.pk: 3}
    active = set(Memory.objects.filter(active=True).values_list("id", flat=True))
    # The pinned one stays although it is worth least; the next three lowest go.
    assert active == {memories[0].pk, memories[4].pk, memories[5].pk}
    evicted = fresh(memories[1])
    assert (evicted.tier, evicted.archived_at is not None) == ("frozen", True)
    assert events(evicted, EventAction.EVICTED)[0].reason == (
        "over the project's limit of 3 memories"
    )
    assert evict_memories().total == 0


def test_a_project_over_its_token_limit_sheds_until_it_fits(project, make_memory):
    memories = [make_memory(project=project) for _ in range(5)]
    each = fresh(memories[0]).token_count
    Memory.objects.update(token_count=each)
    set_policy(project, max_total_tokens=each * 2)
    assert evict_memories().total == 3
    assert Memory.objects.filter(active=True).count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_eviction_workers_evict_only_what_is_over(project, make_memory, two_at_once, state):
    for _ in range(12):
        make_memory(project=project)
    set_policy(project, max_items=5)
    two_at_once(lambda: evict_memories(batch_size=3))
    assert Memory.objects.filter(active=True).count() == 5
    assert MemoryEvent.objects.filter(action=EventAction.EVICTED).count() == 7
