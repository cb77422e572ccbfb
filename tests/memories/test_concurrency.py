"""Concurrent outcomes on real, separate PostgreSQL connections never lose an update."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import connection, transaction

from memories import services
from memories.actors import Actor
from memories.models import Memory, MemoryEvent, Run
from tests.concurrency import Call, wait_until, waiting_on_locks

pytestmark = pytest.mark.django_db(transaction=True)


def _release_when_all_wait(lock: Callable[[], None], calls: list[Callable[[], object]]):
    """Hold ``lock`` in this connection until every call is blocked on it, then let them go."""
    with transaction.atomic():
        lock()
        running = [Call(call) for call in calls]
        wait_until(
            lambda: waiting_on_locks() >= len(calls) or any(c.done for c in running),
            "the writers reach the lock",
        )
        assert not any(c.done for c in running), [c.error for c in running]
    return [call.join() for call in running]


def test_two_outcomes_at_once_on_shared_memories_both_count(project, make_memory, make_run):
    shared = [make_memory(project=project) for _ in range(3)]
    only_first = make_memory(project=project)
    first, second = make_run(project=project), make_run(project=project)
    services.run_give_memories(run=first, ranked=[(m.pk, 0.0) for m in [*shared, only_first]])
    services.run_give_memories(run=second, ranked=[(m.pk, 0.0) for m in reversed(shared)])
    actor = Actor.system("tests")

    _release_when_all_wait(
        lock=lambda: list(Memory.objects.select_for_update().filter(pk__in=[m.pk for m in shared])),
        calls=[
            lambda: services.run_record_outcome(run=first, outcome="succeeded", actor=actor),
            lambda: services.run_record_outcome(run=second, outcome="succeeded", actor=actor),
        ],
    )

    for memory in shared:
        assert Memory.objects.get(pk=memory.pk).confidence == 0.7
    assert Memory.objects.get(pk=only_first.pk).confidence == 0.6
    assert MemoryEvent.objects.filter(memory_id=shared[0].pk, action="outcome").count() == 2


def test_opposite_outcomes_at_once_cancel_out(project, make_memory, make_run):
    shared = make_memory(project=project)
    up, down = make_run(project=project), make_run(project=project)
    for run in (up, down):
        services.run_give_memories(run=run, ranked=[(shared.pk, 0.0)])
    actor = Actor.system("tests")

    _release_when_all_wait(
        lock=lambda: list(Memory.objects.select_for_update().filter(pk=shared.pk)),
        calls=[
            lambda: services.run_record_outcome(run=up, outcome="succeeded", actor=actor),
            lambda: services.run_record_outcome(run=down, outcome="failed", actor=actor),
        ],
    )

    assert Memory.objects.get(pk=shared.pk).confidence == 0.5


def test_the_same_outcome_sent_twice_at_once_counts_once(project, make_memory, make_run):
    memory = make_memory(project=project)
    run = make_run(project=project)
    services.run_give_memories(run=run, ranked=[(memory.pk, 0.0)])
    actor = Actor.system("tests")

    results = _release_when_all_wait(
        lock=lambda: list(Run.objects.select_for_update().filter(pk=run.pk)),
        calls=[lambda: services.run_record_outcome(run=run, outcome="succeeded", actor=actor)] * 2,
    )

    assert sorted(result.recorded for result in results) == [False, True]
    assert Memory.objects.get(pk=memory.pk).confidence == 0.6


def test_two_identical_creates_at_once_with_one_idempotency_key_make_one_memory(project):
    from rest_framework.test import APIClient

    _, token = services.api_key_create(project=project, name="agent")

    def post():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return client.post(
            f"/api/projects/{project.slug}/memories",
            {"type": "pattern", "content": "Only once"},
            format="json",
            HTTP_IDEMPOTENCY_KEY="same-key",
        )

    def hold_memory_inserts():
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE project_memories IN EXCLUSIVE MODE")

    responses = _release_when_all_wait(lock=hold_memory_inserts, calls=[post, post])

    assert sorted(r.status_code for r in responses) == [201, 201]
    assert responses[0].json() == responses[1].json()
    assert Memory.objects.filter(content="Only once").count() == 1


def test_writers_naming_the_same_new_entities_at_once_all_land_once(project):
    """Entities are inserted in key order and mentions in memory order, so writers that name
    the same new names (in any order) wait for each other and never deadlock."""
    from knowledge.models import Entity, EntityMention

    actor = Actor.system("tests")

    def write(content: str) -> Callable[[], object]:
        return lambda: services.memory_create(
            project=project, type="learning", content=content, source="run", actor=actor
        )

    _release_when_all_wait(
        lock=write("ZetaWidget feeds AlphaWidget through src/widgets/pipe.py."),
        calls=[
            write("AlphaWidget reads ZetaWidget output in src/widgets/pipe.py."),
            write("src/widgets/pipe.py joins ZetaWidget and AlphaWidget."),
        ],
    )

    names = ["alphawidget", "zetawidget", "src/widgets/pipe.py"]
    entities = Entity.objects.filter(project=project, key__in=names)
    assert sorted(entities.values_list("key", flat=True)) == sorted(names)
    for entity in entities:
        assert EntityMention.objects.filter(entity=entity).count() == 3
