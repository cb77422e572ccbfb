"""Writers of memories, at once on real PostgreSQL connections, never deadlock: each takes
its row locks in the one order of memories.locks. Each test holds, in the test's own
connection, the lock that makes two writers meet in the worst order PostgreSQL allows,
then lets them go: a writer that locked in another order would be "deadlock detected"."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from knowledge import decisions, judge, judged
from knowledge.contradictions import Verdict
from knowledge.keep import Row
from knowledge.models import MemoryPair, PairKind
from memories import services
from memories.actors import Actor
from memories.metrics import LOCK_RETRIES
from memories.models import Memory, MemoryEvent
from memories.services import uses
from policies import eviction
from tests.concurrency import start_waiting

pytestmark = [pytest.mark.transactional, pytest.mark.django_db(transaction=True)]

ACTOR = Actor.system("tests")


def _hold(memory: Memory, mode: str = "FOR SHARE") -> None:
    """Lock a memory row in this connection (in its open transaction) in ``mode``."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM project_memories WHERE id = %s {mode}", [memory.pk])


def test_a_run_given_memories_and_an_edit_of_them_at_once(project, make_memory, make_run):
    """The give's foreign-key checks lock the memories at its commit (in its insert order);
    an edit locks them in id order meanwhile."""
    low, high = make_memory(project=project), make_memory(project=project)
    run = make_run(project=project)
    with transaction.atomic():
        _hold(high)  # the edit waits here, holding ``low``
        edit = start_waiting(
            lambda: services.memories_set_pinned(
                memory_ids=[low.pk, high.pk], pinned=True, actor=ACTOR
            ),
            waiting=1,
        )
        # Best first: the higher id is inserted first.
        give = start_waiting(
            lambda: services.run_give_memories(run=run, ranked=[(high.pk, 0.9), (low.pk, 0.8)]),
            waiting=2,
        )
    give.join()
    edit.join()
    assert set(run.given.values_list("memory_id", flat=True)) == {low.pk, high.pk}
    assert Memory.objects.filter(pinned=True).count() == 2


def test_a_pair_decided_while_one_of_its_memories_is_edited(project, make_memory):
    """Deciding a pair changes its memories; an edit of one of them looks at its pairs again."""
    kept = make_memory(project=project, content="Deploy on Tuesdays only.")
    replaced = make_memory(project=project, content="Deploy on Fridays only.")
    # Found as they were written (another day of the week), or made here.
    pair, _ = MemoryPair.objects.get_or_create(
        first_id=kept.pk,
        second_id=replaced.pk,
        defaults={
            "project": project,
            "kind": PairKind.CONFLICT,
            "similarity": 0.9,
            "evidence": {},
            "first_hash": kept.content_hash,
            "second_hash": replaced.content_hash,
            "found_by": "tests",
        },
    )
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM memory_pairs WHERE id = %s FOR SHARE", [pair.pk])
        decide = start_waiting(
            lambda: decisions.pair_resolve(
                pair_id=pair.pk, action="keep", memory_id=kept.pk, actor=ACTOR
            ),
            waiting=1,
        )
        edit = start_waiting(
            lambda: services.memory_update(
                memory=replaced, content="Deploy on Fridays only, after noon.", actor=ACTOR
            ),
            waiting=2,
        )
    decide.join()
    edit.join()
    pair.refresh_from_db()
    assert pair.resolution == "kept"
    replaced.refresh_from_db()
    assert replaced.superseded_by_id == kept.pk
    assert replaced.content == "Deploy on Fridays only, after noon."


def test_uses_counted_while_the_same_memories_are_edited(project, make_memory):
    """A use is counted in one statement over the memories given; PostgreSQL reads a small
    table in the order its rows lie on disk, and an edited row lies after the others."""
    low, middle, high = (make_memory(project=project) for _ in range(3))
    services.memories_set_pinned(memory_ids=[low.pk], pinned=True, actor=ACTOR)  # moves it
    with transaction.atomic():
        _hold(high)  # counting waits here
        count = start_waiting(lambda: uses.write([low.pk, middle.pk, high.pk]), waiting=1)
        edit = start_waiting(
            lambda: services.memories_set_pinned(
                memory_ids=[low.pk, middle.pk], pinned=False, actor=ACTOR
            ),
            waiting=2,
        )
    count.join()
    edit.join()
    assert list(Memory.objects.order_by("id").values_list("access_count", "pinned")) == [
        (1, False),
        (1, False),
        (1, False),
    ]


def _three_with_the_lowest_moved(project, make_memory):
    """Three memories, the lowest id edited last (so it lies after the others on disk)."""
    low, middle, high = (make_memory(project=project) for _ in range(3))
    Memory.objects.filter(pk=low.pk).update(relevance_score=0.9)
    return low, middle, high


def test_eviction_while_the_memories_it_archives_are_edited(project, make_memory):
    low, middle, high = _three_with_the_lowest_moved(project, make_memory)
    type(project.policy).objects.filter(pk=project.policy.pk).update(max_items=0)
    with transaction.atomic():
        _hold(high)
        evict = start_waiting(eviction.evict_memories, waiting=1)
        edit = start_waiting(
            lambda: services.memories_change_type(
                memory_ids=[low.pk, middle.pk], type="warning", actor=ACTOR
            ),
            waiting=2,
        )
    evict.join()
    edit.join()
    assert not Memory.objects.filter(active=True).exists()


def _retries() -> float:
    return sum(LOCK_RETRIES.labels(reason)._value.get() for reason in ("deadlock", "serialization"))


def test_an_outcome_takes_in_the_memories_given_while_it_waited(project, make_memory, make_run):
    """The outcome locks the run's memories, then the run: memories given in between (by a
    give that held the run) are taken too, in order, never lost."""
    early, late = make_memory(project=project), make_memory(project=project)
    run = make_run(project=project)
    services.run_give_memories(run=run, ranked=[(early.pk, 0.9)])
    before = _retries()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT id FROM memories_run WHERE id = %s FOR SHARE", [run.pk])
        give = start_waiting(
            lambda: services.run_give_memories(run=run, ranked=[(late.pk, 0.8)]), waiting=1
        )
        outcome = start_waiting(
            lambda: services.run_record_outcome(run=run, outcome="succeeded", actor=ACTOR),
            waiting=2,
        )
    give.join()
    result = outcome.join()
    assert sorted(m.pk for m in result.changes.changed) == [early.pk, late.pk]
    assert list(Memory.objects.order_by("id").values_list("confidence", flat=True)) == [0.6, 0.6]
    assert _retries() == before


def test_a_write_rolled_back_by_a_deadlock_runs_once_more(project, make_memory):
    """The safety net: a writer PostgreSQL picks to break a deadlock (here with a session
    that locks against the order) is run again, once, and its change is made once."""
    low, high = make_memory(project=project), make_memory(project=project)
    before = _retries()
    with transaction.atomic():
        _hold(high, "FOR NO KEY UPDATE")
        pin = start_waiting(
            lambda: services.memories_set_pinned(
                memory_ids=[low.pk, high.pk], pinned=True, actor=ACTOR
            ),
            waiting=1,
        )
        with connection.cursor() as cursor:
            # The pin, waiting longer, is the one PostgreSQL rolls back.
            cursor.execute("SET LOCAL deadlock_timeout = '20s'")
        _hold(low, "FOR NO KEY UPDATE")  # against the order: a deadlock, broken at once
    pin.join()
    assert _retries() == before + 1
    assert Memory.objects.filter(pinned=True).count() == 2
    assert MemoryEvent.objects.filter(action="pinned").count() == 2


def test_a_judged_pair_kept_while_another_walk_keeps_the_same_pair(project, make_memory):
    """Two walks keeping a judge's answer for the same two memories: the second waits on the
    first's insert and adds nothing, in the pairs' one order, with no error."""
    first = make_memory(project=project, content="Session cookies are signed with a key.")
    second = make_memory(project=project, content="Session cookies are encrypted with a key.")
    MemoryPair.objects.filter(first_id=first.pk, second_id=second.pk).delete()
    rows = [
        Row(m.pk, project.pk, m.content, m.content_hash, [], None, 1.0) for m in (first, second)
    ]
    asked = [judged.Undecided(rows[0], rows[1], Verdict(None, 0.7, {"undecided": True}))]
    answer = judge.Answer("conflict", "signed", "encrypted", "Signed or encrypted.", "m", False)
    answers = {(first.content_hash, second.content_hash): answer}
    kept: list[dict] = []
    with transaction.atomic():
        assert judged.keep_answers(asked, answers, found_by="system:walk-1") == {project.pk: 1}
        other = start_waiting(
            lambda: kept.append(judged.keep_answers(asked, answers, found_by="system:walk-2")),
            waiting=1,
        )
        assert not other.done  # it waits on the first insert of the same pair
    other.join()
    assert kept == [{}]  # it ended without an error, and opened nothing: the first walk did
    pair = MemoryPair.objects.get(first_id=first.pk, second_id=second.pk)
    assert (pair.kind, pair.found_by, pair.evidence["class"]) == (
        "conflict",
        "system:walk-1",
        "judge",
    )


def test_a_bulk_edit_batch_while_the_memories_it_changes_are_edited(
    project, make_memory, reviewer_actor
):
    """A batch of a bulk edit (memories.services.bulk) locks its memories in id order, as
    every other writer: held at the last one, it waits; an edit of the first two waits on
    the batch; both finish, nothing lost and no deadlock retried."""
    from memories.services import bulk

    low, middle, high = (make_memory(project=project) for _ in range(3))
    job = bulk.bulk_edit_start(
        memories=Memory.objects.filter(pk__in=[low.pk, middle.pk, high.pk]),
        action="pin",
        actor=reviewer_actor,
        enqueue=False,
    )
    retries = _retries()
    with transaction.atomic():
        _hold(high)
        batch = start_waiting(lambda: bulk.bulk_edit_run(job_id=job.pk), waiting=1)
        edit = start_waiting(
            lambda: services.memories_change_type(
                memory_ids=[middle.pk, low.pk], type="warning", actor=ACTOR
            ),
            waiting=2,
        )
    batch.join()
    edit.join()
    assert Memory.objects.filter(pinned=True, type="warning").count() == 2
    assert Memory.objects.get(pk=high.pk).pinned
    assert _retries() == retries
