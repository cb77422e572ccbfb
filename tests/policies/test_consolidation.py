"""Consolidation: near-duplicates merge, reversibly, once, and are compared again when
they change."""

from __future__ import annotations

import math

import pytest
from django.db import connection

from memories import services as memory_services
from memories.models import EventAction, Memory, MemoryEvent
from policies.consolidation import consolidate_memories
from policies.models import JobState, PendingComparison
from tests.policies.support import SYSTEM, events, fresh, set_policy

pytestmark = pytest.mark.django_db


NOTE = "Always lock the invoice row before updating its total, or two workers lose updates."


def test_near_duplicates_merge_into_the_most_confident(project, make_memory):
    first = make_memory(project=project, content=NOTE, tags=["billing"])
    second = make_memory(project=project, content=NOTE.replace("Always", "Please always"))
    third = make_memory(project=project, content=NOTE, tags=["src/billing/**"])
    other_type = make_memory(project=project, content=NOTE, type="warning")
    unrelated = make_memory(project=project, content="Use UTC for every stored time.")
    Memory.objects.filter(pk=first.pk).update(access_count=2, confidence=0.6)
    Memory.objects.filter(pk=second.pk).update(access_count=3, confidence=0.9)
    Memory.objects.filter(pk=third.pk).update(access_count=4, confidence=0.5)
    result = consolidate_memories()
    assert result.total == 2
    survivor = fresh(second)
    assert survivor.active
    assert survivor.confidence == 0.9
    assert survivor.access_count == 9
    assert sorted(survivor.tags) == ["billing", "src/billing/**"]
    assert sorted(survivor.tag_keys) == sorted(
        set(fresh(first).tag_keys) | set(fresh(third).tag_keys)
    )
    for merged in (first, third):
        merged = fresh(merged)
        assert (merged.active, merged.tier, merged.merged_into_id) == (False, "frozen", second.pk)
    assert (fresh(other_type).active, fresh(unrelated).active) == (True, True)
    (event,) = events(survivor, EventAction.MERGED)
    assert event.changes["absorbed"] == [[], sorted([first.pk, third.pk])]
    # The survivor is found through its write scope now.
    from memories.tags import tag_matches_scope

    assert any(tag_matches_scope(t, ["src/billing/models.py"]) for t in survivor.tags)
    assert consolidate_memories().total == 0


def test_a_merge_is_reversible(project, make_memory):
    keep = make_memory(project=project, content=NOTE, tags=["billing"])
    merged = make_memory(project=project, content=NOTE + " ", tags=["ledger"])
    Memory.objects.filter(pk=keep.pk).update(confidence=0.9, access_count=1)
    Memory.objects.filter(pk=merged.pk).update(confidence=0.5, access_count=5)
    consolidate_memories()
    assert fresh(keep).tags == ["billing", "ledger"]
    memory_services.memories_restore(memory_ids=[merged.pk], actor=SYSTEM)
    merged, keep = fresh(merged), fresh(keep)
    assert (merged.active, merged.merged_into_id, merged.archived_at) == (True, None, None)
    assert merged.tier == "warm"
    assert keep.tags == ["billing"]
    assert keep.access_count == 1


def test_a_merge_never_points_at_a_memory_merged_itself(project, make_memory):
    """A is near B and B near C, but A is not near C: B merges into A; C waits, and is not
    merged into B (which is gone)."""
    a = make_memory(project=project, content="Lock the invoice row before updating totals")
    b = make_memory(
        project=project,
        content="Lock the invoice row before updating totals in the ledger service",
    )
    c = make_memory(
        project=project, content="Before updating totals in the ledger service run the checks"
    )
    Memory.objects.filter(pk=a.pk).update(confidence=0.9)
    Memory.objects.filter(pk=b.pk).update(confidence=0.7)
    Memory.objects.filter(pk=c.pk).update(confidence=0.5)
    set_policy(project, consolidate_similarity=0.6)
    assert consolidate_memories().total == 1
    assert fresh(b).merged_into_id == a.pk
    assert fresh(c).active
    assert not Memory.objects.filter(merged_into__active=False).exists()
    # C is compared again with what survived, and stays: it is not near A.
    assert pending() == {c.pk}
    assert consolidate_memories().total == 0
    assert pending() == set()
    assert fresh(c).active


def test_pinned_memories_are_never_merged_away(project, make_memory):
    pinned = make_memory(project=project, content=NOTE)
    make_memory(project=project, content=NOTE)
    Memory.objects.filter(pk=pinned.pk).update(confidence=0.1)
    memory_services.memories_set_pinned(memory_ids=[pinned.pk], pinned=True, actor=SYSTEM)
    consolidate_memories()
    assert fresh(pinned).active


def test_consolidation_goes_on_from_where_it_stopped(project, make_memory):
    make_memory(project=project, content=NOTE)
    consolidate_memories()
    reached = JobState.objects.get(name="consolidate_memories").cursor
    late = make_memory(project=project, content=NOTE)
    assert reached < late.pk
    assert consolidate_memories().total == 1


def pending():
    return set(PendingComparison.objects.values_list("memory_id", flat=True))


def test_a_memory_edited_into_a_near_duplicate_is_compared_again(
    project, make_memory, django_capture_on_commit_callbacks
):
    keep = make_memory(project=project, content=NOTE)
    edited = make_memory(project=project, content="Use UTC for every stored time.")
    assert consolidate_memories().total == 0  # the walk has passed both
    with django_capture_on_commit_callbacks(execute=True):  # queued once the edit commits
        memory_services.memory_update(memory=edited, actor=SYSTEM, content=NOTE + " Really.")
    assert pending() == {edited.pk}
    Memory.objects.filter(pk=keep.pk).update(confidence=0.9)
    assert consolidate_memories().changed == {project.pk: 1}
    assert fresh(edited).merged_into_id == keep.pk
    assert pending() == set()
    assert consolidate_memories().total == 0


def test_a_memory_whose_type_changed_or_that_became_active_again_is_compared_again(
    project, make_memory, django_capture_on_commit_callbacks
):
    keep = make_memory(project=project, content=NOTE)
    warning = make_memory(project=project, content=NOTE, type="warning")
    paused = make_memory(project=project, content=NOTE + " ")
    memory_services.memories_set_active(memory_ids=[paused.pk], active=False, actor=SYSTEM)
    Memory.objects.filter(pk=keep.pk).update(confidence=0.9)
    assert consolidate_memories().total == 0
    with django_capture_on_commit_callbacks(execute=True):
        memory_services.memories_change_type(memory_ids=[warning.pk], type="pattern", actor=SYSTEM)
        memory_services.memories_set_active(memory_ids=[paused.pk], active=True, actor=SYSTEM)
    assert pending() == {warning.pk, paused.pk}
    assert consolidate_memories().total == 2
    assert fresh(warning).merged_into_id == fresh(paused).merged_into_id == keep.pk


def test_a_merge_a_person_undid_is_not_merged_again(
    project, make_memory, django_capture_on_commit_callbacks
):
    keep = make_memory(project=project, content=NOTE)
    merged = make_memory(project=project, content=NOTE + " ")
    assert consolidate_memories().total == 1
    restored = fresh(merged) if fresh(merged).merged_into_id else fresh(keep)
    with django_capture_on_commit_callbacks(execute=True) as announced:
        memory_services.memories_restore(memory_ids=[restored.pk], actor=SYSTEM)
    assert announced  # the restore was announced, and its subscribers queued nothing
    assert pending() == set()
    assert consolidate_memories().total == 0
    assert fresh(restored).active
    # Until its words change.
    with django_capture_on_commit_callbacks(execute=True):
        memory_services.memory_update(
            memory=restored, actor=SYSTEM, content=NOTE.replace("Always", "Please always")
        )
    assert consolidate_memories().total == 1


@pytest.mark.django_db(transaction=True)
def test_two_consolidation_workers_merge_each_duplicate_once(project, make_memory, two_at_once):
    for i in range(6):
        make_memory(project=project, content=NOTE + " " * i)
    two_at_once(lambda: consolidate_memories(batch_size=2))
    assert Memory.objects.filter(active=True).count() == 1
    assert (
        MemoryEvent.objects.filter(action=EventAction.MERGED, changes__has_key="active").count()
        == 5
    )


def test_near_duplicates_that_differ_in_their_longest_words_still_merge(project, make_memory):
    """Candidates are found through a memory's longest words; a duplicate that changed some
    of them is still found (through the ones it kept, or from its own side)."""
    keep = make_memory(project=project, content=NOTE)
    # "invoice" is one of NOTE's longest words; the edit has it no more.
    edited = make_memory(project=project, content=NOTE.replace("invoice", "ledger"))
    Memory.objects.filter(pk=keep.pk).update(confidence=0.9)
    assert consolidate_memories().total == 1
    assert fresh(edited).merged_into_id == keep.pk


def test_a_pair_exactly_at_the_threshold_merges(project, make_memory):
    """Only pairs whose trigram counts allow the threshold are compared: the bound must
    keep a pair whose similarity is the threshold itself. Here one text's trigrams hold the
    other's, so the similarity is the ratio of their counts (72 / 78), which real division
    rounds up: a bound computed in double precision would drop this pair."""
    keep = make_memory(project=project, content=NOTE)
    longer = make_memory(project=project, content=NOTE + " zebra")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT similarity(%s, %s)::float8,"
            " cardinality(show_trgm(%s)), cardinality(show_trgm(%s))",
            [NOTE, longer.content, NOTE, longer.content],
        )
        similarity, shorter_count, longer_count = cursor.fetchone()
    assert similarity > shorter_count / longer_count  # rounded up: the edge case
    set_policy(project, consolidate_similarity=math.nextafter(similarity, 2))
    assert consolidate_memories().total == 0
    set_policy(project, consolidate_similarity=similarity)
    JobState.objects.filter(name="consolidate_memories").update(cursor=0)  # a new pass
    assert consolidate_memories().total == 1
    assert fresh(longer).merged_into_id == keep.pk or fresh(keep).merged_into_id == longer.pk


def test_consolidation_compares_within_one_project(project, other_project, make_memory):
    mine = make_memory(project=project, content=NOTE)
    theirs = make_memory(project=other_project, content=NOTE)
    assert consolidate_memories().total == 0
    assert fresh(mine).active
    assert fresh(theirs).active
