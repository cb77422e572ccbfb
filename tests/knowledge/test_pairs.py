"""Repeats and possible conflicts found as memories are written, and decided by reviewers."""

from __future__ import annotations

import os

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from knowledge import decisions, embeddings, pairs, supersedes
from knowledge.models import MemoryPair
from memories import services
from memories.actors import Actor
from memories.models import EventAction, Memory, MemoryEvent
from memories.services import Conflict
from tests.support import require

pytestmark = pytest.mark.django_db

TEN = "HTTP client calls to the billing API time out after 10 seconds."
THIRTY = "HTTP client calls to the billing API time out after 30 seconds."


@pytest.fixture
def agent_actor(project):
    api_key, _ = services.api_key_create(project=project, name="agent")
    return Actor.for_api_key(api_key)


def open_pair(a: Memory, b: Memory) -> MemoryPair:
    first, second = sorted([a.pk, b.pk])
    return MemoryPair.objects.get(first_id=first, second_id=second)


def test_a_conflict_is_found_when_the_second_memory_is_written(project, make_memory):
    old = make_memory(project=project, content=TEN, tags=["src/billing/**"])
    new = make_memory(project=project, content=THIRTY, tags=["src/billing/**"])
    pair = open_pair(old, new)
    assert (pair.kind, pair.status, pair.project_id) == ("conflict", "open", project.pk)
    assert pair.evidence["class"] == "quantity"
    differs = pair.evidence["differs"][0]
    assert (differs["first"], differs["second"]) == ("10 seconds", "30 seconds")
    # The spans point into each memory's own words.
    assert TEN[slice(*differs["firstSpan"])] == "10 seconds"
    assert THIRTY[slice(*differs["secondSpan"])] == "30 seconds"
    assert pair.found_by == "system:tests"
    assert (pair.first_hash, pair.second_hash) == (old.content_hash, new.content_hash)


def test_a_repeat_is_found_and_unrelated_memories_are_not_paired(project, make_memory):
    rule = make_memory(project=project, content="Full test suite required for src/core/.")
    again = make_memory(
        project=project, content="Full test suite required for src/core/. (seen in run-004)"
    )
    make_memory(project=project, content="Invoice PDFs are rendered by WeasyPrint.")
    assert open_pair(rule, again).kind == "repeat"
    assert MemoryPair.objects.count() == 1


def test_another_projects_memories_are_never_paired(project, other_project, make_memory):
    make_memory(project=other_project, content=TEN)
    make_memory(project=project, content=THIRTY)
    assert not MemoryPair.objects.exists()


def test_a_global_memory_pairs_only_when_the_tags_overlap(
    project, make_memory, system_actor, reviewer_actor
):
    shared = services.memory_create(
        project=None, type="pattern", content=TEN, source="run", actor=system_actor,
        tags=["http"],
    )  # fmt: skip
    services.memory_approve(memory=shared, actor=reviewer_actor)
    untagged = make_memory(project=project, content=THIRTY)
    tagged = make_memory(project=project, content=THIRTY.replace("HTTP", "Http"), tags=["http"])
    found = MemoryPair.objects.filter(first_id=shared.pk)
    assert [(p.second_id, p.project_id) for p in found] == [(tagged.pk, project.pk)]
    assert untagged.pk not in {p.second_id for p in found}


def test_a_dismissed_pair_stays_dismissed_until_the_words_change(
    project, make_memory, reviewer_actor
):
    old = make_memory(project=project, content=TEN)
    new = make_memory(project=project, content=THIRTY)
    pair = decisions.pair_resolve(pair_id=open_pair(old, new).pk, action="dismiss",
                                 actor=reviewer_actor)  # fmt: skip
    assert (pair.status, pair.resolution) == ("dismissed", "not_conflict")
    # Compared again with the same words (the beat job, an edit of other fields): stays.
    pairs.find([old.pk, new.pk], found_by="system:find_conflicts")
    services.memory_update(memory=new, actor=reviewer_actor, tags=["src/http/**"])
    assert open_pair(old, new).status == "dismissed"
    # New words: judged again, and open again.
    services.memory_update(memory=new, actor=reviewer_actor, content=THIRTY.replace("30", "45"))
    pair = open_pair(old, new)
    assert (pair.status, pair.resolution) == ("open", "")
    assert pair.evidence["differs"][0]["second"] == "45 seconds"


def test_an_open_pair_closes_when_new_words_settle_it(project, make_memory, reviewer_actor):
    old = make_memory(project=project, content=TEN)
    new = make_memory(project=project, content=THIRTY)
    services.memory_update(memory=new, actor=reviewer_actor, content="Use Redis for the cache.")
    pair = open_pair(old, new)
    assert (pair.status, pair.resolution) == ("resolved", "changed")


@pytest.mark.parametrize("written", [1, 20])
def test_finding_pairs_is_the_same_few_statements_for_one_memory_or_many(
    project, make_memory, written
):
    for index in range(30):
        make_memory(project=project, content=f"{TEN} Note {index}.")
    new = [make_memory(project=project, content=THIRTY + f" ({n})") for n in range(written)]
    MemoryPair.objects.all().delete()
    with CaptureQueriesContext(connection) as queries:
        pairs.find([memory.pk for memory in new], found_by="test")
    # the memories, their thresholds and candidates; their pairs; one INSERT (with pgvector,
    # one nearest-by-meaning lookup for all of them with its search width, and one read of
    # those not read yet)
    shown = [str(q["sql"])[:80] for q in queries]
    if embeddings.nearest_index():
        assert 5 <= len(queries) <= 6, shown
    else:
        assert len(queries) == 3, shown
    for memory in new:
        assert MemoryPair.objects.filter(Q(first_id=memory.pk) | Q(second_id=memory.pk)).exists()


def test_comparing_again_with_the_same_words_writes_nothing_and_reads_no_settled_partner(
    project, make_memory
):
    """The beat job compares every memory again: a pair whose words have not changed is as
    found, so it is neither rewritten nor read again (its partner is no candidate)."""
    anchor = make_memory(project=project, content=TEN)
    others = [make_memory(project=project, content=THIRTY.replace("30", str(n))) for n in
              range(40, 52)]  # fmt: skip
    found = MemoryPair.objects.filter(Q(first_id=anchor.pk) | Q(second_id=anchor.pk), status="open")
    assert found.count() >= 3
    stamps = dict(MemoryPair.objects.values_list("pk", "updated_at"))
    with CaptureQueriesContext(connection) as queries:
        pairs.find([anchor.pk, *(m.pk for m in others)], found_by="system:find_conflicts")
    writes = [q for q in queries if str(q["sql"]).lstrip().upper().startswith("UPDATE")]
    assert writes == []
    after = dict(MemoryPair.objects.filter(pk__in=stamps).values_list("pk", "updated_at"))
    assert after == stamps
    # With new words on one side, its open pairs are read and judged again.
    services.memory_update(memory=anchor, actor=Actor.system("tests"),
                           content="Use Redis for the cache.")  # fmt: skip
    assert not MemoryPair.objects.filter(
        Q(first_id=anchor.pk) | Q(second_id=anchor.pk), status="open"
    ).exists()


def test_an_open_pairs_partner_is_read_again_only_once_words_changed(project, make_memory):
    a = make_memory(project=project, content=TEN)
    z = make_memory(project=project, content="Invoice PDFs are rendered by WeasyPrint.")
    first, second = sorted([a, z], key=lambda m: m.pk)
    pair = MemoryPair.objects.create(
        project=project, first=first, second=second, kind="conflict",
        first_hash=first.content_hash, second_hash=second.content_hash, found_by="test",
    )  # fmt: skip
    assert z.pk not in pairs._found([a.pk], "").candidates.get(a.pk, [])
    MemoryPair.objects.filter(pk=pair.pk).update(second_hash="words judged before")
    assert z.pk in pairs._found([a.pk], "").candidates[a.pk]


# --- supersede -----------------------------------------------------------------------------------


def test_a_reviewer_supersedes_at_once_and_restore_brings_it_back(
    project, make_memory, reviewer_actor
):
    old = make_memory(project=project, content=TEN)
    new = make_memory(project=project, content=THIRTY)
    result = supersedes.memory_supersede(memory=old, by=new, actor=reviewer_actor, reason="newer")
    assert (result.done, result.waiting) == ([old.pk], [])
    old.refresh_from_db()
    assert (old.active, old.tier, old.superseded_by_id) == (False, "frozen", new.pk)
    assert old.superseded_at is not None
    assert old.archived_at is not None
    assert old.superseded_actor == reviewer_actor.label
    event = MemoryEvent.objects.filter(memory_id=old.pk).order_by("-id").first()
    assert event.action == EventAction.SUPERSEDED
    assert event.changes["superseded_by"] == [None, new.pk]
    assert "newer" in event.reason
    # The pair between them follows the decision.
    pair = open_pair(old, new)
    assert (pair.status, pair.resolution, pair.outcome_memory_id) == ("resolved", "kept", new.pk)
    services.memories_restore(memory_ids=[old.pk], actor=reviewer_actor)
    old.refresh_from_db()
    assert (old.active, old.superseded_by_id, old.archived_at) == (True, None, None)
    assert old.content == TEN  # nothing was lost


def test_a_chain_of_supersedes_resolves_to_the_live_memory(project, make_memory, reviewer_actor):
    a, b, c = (make_memory(project=project) for _ in range(3))
    supersedes.memory_supersede(memory=a, by=b, actor=reviewer_actor)
    b.refresh_from_db()
    supersedes.memory_supersede(memory=b, by=c, actor=reviewer_actor)
    assert supersedes.live_successors([a.pk, b.pk, c.pk]) == {a.pk: c.pk, b.pk: c.pk}
    # Restoring the middle one makes it the live end of the first one's chain.
    services.memories_restore(memory_ids=[b.pk], actor=reviewer_actor)
    assert supersedes.live_successors([a.pk]) == {a.pk: b.pk}


def test_a_supersede_that_would_make_a_cycle_or_repeat_itself_is_refused(
    project, make_memory, reviewer_actor
):
    a, b = make_memory(project=project), make_memory(project=project)
    with pytest.raises(ValidationError):
        supersedes.memory_supersede(memory=a, by=a, actor=reviewer_actor)
    supersedes.memory_supersede(memory=a, by=b, actor=reviewer_actor)
    b.refresh_from_db()
    a.refresh_from_db()
    with pytest.raises(ValidationError, match="itself superseded"):
        supersedes.memory_supersede(memory=b, by=a, actor=reviewer_actor)
    with pytest.raises(Conflict, match="already superseded"):
        supersedes.memory_supersede(memory=a, by=b, actor=reviewer_actor)


def test_an_agents_supersede_of_an_approved_memory_waits_for_a_reviewer(
    project, make_memory, reviewer_actor, agent_actor
):
    old = make_memory(project=project, content=TEN)
    services.memory_approve(memory=old, actor=reviewer_actor)
    new = make_memory(project=project, content=THIRTY, actor=agent_actor)
    result = supersedes.memory_supersede(memory=old, by=new, actor=agent_actor, reason="measured")
    assert result.done == []
    [pair] = result.waiting
    assert (pair.kind, pair.status) == ("conflict", "open")
    assert pair.evidence["supersede"] == {
        "by": new.pk, "replaces": old.pk, "proposedBy": agent_actor.label, "reason": "measured",
    }  # fmt: skip
    old.refresh_from_db()
    assert (old.active, old.superseded_by_id) == (True, None)
    # Nor may the agent decide it through the pair.
    with pytest.raises(PermissionDenied):
        decisions.pair_resolve(pair_id=pair.pk, action="keep", memory_id=new.pk, actor=agent_actor)
    # A reviewer's "keep this one" carries it out.
    decisions.pair_resolve(pair_id=pair.pk, action="keep", memory_id=new.pk, actor=reviewer_actor)
    old.refresh_from_db()
    assert (old.active, old.superseded_by_id) == (False, new.pk)


def test_an_agents_supersede_of_a_pending_memory_takes_effect(project, make_memory, agent_actor):
    old = make_memory(project=project, content=TEN, actor=agent_actor)
    new = make_memory(project=project, content=THIRTY, actor=agent_actor)
    assert supersedes.memory_supersede(memory=old, by=new, actor=agent_actor).done == [old.pk]


def test_merge_makes_one_memory_and_supersedes_both(project, make_memory, reviewer_actor):
    old = make_memory(project=project, content=TEN, tags=["a"])
    new = make_memory(project=project, content=THIRTY, tags=["b"])
    pair = decisions.pair_resolve(
        pair_id=open_pair(old, new).pk,
        action="merge",
        content="Billing API calls time out after 30 seconds (was 10 until May).",
        actor=reviewer_actor,
    )
    merged = Memory.objects.get(pk=pair.outcome_memory_id)
    assert (pair.resolution, merged.review_status, sorted(merged.tags)) == (
        "merged", "approved", ["a", "b"],
    )  # fmt: skip
    for side in (old, new):
        side.refresh_from_db()
        assert (side.active, side.superseded_by_id) == (False, merged.pk)


def test_reject_through_a_pair_is_a_reviewers_act(
    project, make_memory, reviewer_actor, agent_actor
):
    old = make_memory(project=project, content=TEN)
    new = make_memory(project=project, content=THIRTY)
    pair = open_pair(old, new)
    with pytest.raises(PermissionDenied):
        decisions.pair_resolve(pair_id=pair.pk, action="reject", memory_id=new.pk,
                              actor=agent_actor)  # fmt: skip
    decisions.pair_resolve(pair_id=pair.pk, action="reject", memory_id=new.pk,
                          actor=reviewer_actor)  # fmt: skip
    new.refresh_from_db()
    assert (new.review_status, new.active) == ("rejected", False)
    with pytest.raises(Conflict, match="already decided"):
        decisions.pair_resolve(pair_id=pair.pk, action="dismiss", actor=reviewer_actor)


def test_bulk_decisions_report_what_could_not_be_done(project, make_memory, reviewer_actor):
    old = make_memory(project=project, content=TEN)
    new = make_memory(project=project, content=THIRTY)
    pair = open_pair(old, new)
    done, failed = decisions.pairs_resolve(
        pair_ids=[pair.pk, 999999], action="keep-newer", actor=reviewer_actor
    )
    assert done == [pair.pk]
    assert failed[0][0] == 999999
    old.refresh_from_db()
    assert old.superseded_by_id == new.pk


@pytest.mark.pgvector
def test_with_pgvector_the_nearest_in_meaning_are_candidates_too(
    project, other_project, make_memory
):
    require(
        embeddings.nearest_index() is not None,
        "this PostgreSQL has no pgvector (make test runs these on the embedded one)",
        strict=bool(os.environ.get("REQUIRE_PGVECTOR")),
    )
    near = make_memory(project=project, content="Deployments are frozen over the holidays.")
    make_memory(project=other_project, content="Deployments are frozen over the holidays.")
    new = make_memory(project=project, content="No releases to production in late December.")
    found = pairs._found([new.pk], embeddings.configured().name).candidates[new.pk]
    assert near.pk in found  # no word in common: found by meaning alone
    assert all(Memory.objects.get(pk=pk).project_id == project.pk for pk in found)


def test_merging_a_project_memory_with_a_global_one_makes_a_project_memory(
    project, make_memory, system_actor, reviewer_actor
):
    shared = services.memory_create(
        project=None, type="pattern", content=TEN, source="run", actor=system_actor,
        tags=["http"],
    )  # fmt: skip
    services.memory_approve(memory=shared, actor=reviewer_actor)
    mine = make_memory(project=project, content=THIRTY, tags=["http"])
    pair = decisions.pair_resolve(
        pair_id=open_pair(shared, mine).pk, action="merge", actor=reviewer_actor
    )
    merged = Memory.objects.get(pk=pair.outcome_memory_id)
    assert (merged.project_id, merged.scope, merged.active) == (project.pk, "project", True)
    # The one with precedence (the approved global memory) gave its words.
    assert merged.content == TEN


def test_merging_two_global_memories_makes_an_approved_global_one(
    make_memory, system_actor, reviewer_actor
):
    made = []
    for content in (TEN, THIRTY):
        memory = services.memory_create(
            project=None, type="pattern", content=content, source="run", actor=system_actor
        )
        services.memory_approve(memory=memory, actor=reviewer_actor)
        made.append(memory)
    pair = decisions.pair_resolve(
        pair_id=open_pair(*made).pk, action="merge", content=THIRTY, actor=reviewer_actor
    )
    merged = Memory.objects.get(pk=pair.outcome_memory_id)
    assert (merged.project_id, merged.active, merged.review_status) == (None, True, "approved")


def test_the_queue_ranks_the_likeliest_and_weightiest_first(project, make_memory):
    # A conflict between warnings, a repeat between learnings.
    warned = [
        make_memory(project=project, type="warning", content=TEN),
        make_memory(project=project, type="warning", content=THIRTY),
    ]
    said = "Refunds over 500 EUR need a second approver in the admin panel."
    learned = [
        make_memory(project=project, type="learning", content=said),
        make_memory(project=project, type="learning", content=f"{said} Again."),
    ]
    conflict, repeat = open_pair(*warned), open_pair(*learned)
    assert (conflict.kind, repeat.kind) == ("conflict", "repeat")
    assert conflict.priority > repeat.priority > 0
    # The strength of the finding (a quantity 0.8, a repeat 0.5) times the weightier
    # memory's worth (its confidence, a warning 1.0 and a learning 0.7, hot, never given).
    confidence = warned[0].confidence
    assert conflict.priority == round(0.8 * confidence, 4)
    assert repeat.priority == round(0.5 * learned[0].confidence * 0.7, 4)
    ordered = MemoryPair.objects.filter(project=project, status="open").order_by("-priority")
    assert list(ordered) == [conflict, repeat]


def test_a_memory_back_from_the_archive_is_compared_by_the_walk_not_its_restore(
    project, make_memory, reviewer_actor
):
    """Restoring is undoing: a restore of a hundred thousand (a bulk edit's undo) writes
    them back without comparing each with its candidates in its transaction; the walk that
    compares every active memory (policies.conflicts) finds what it meets, as consolidation
    leaves a memory back from the archive alone."""
    from policies.conflicts import find_conflicts

    archived = make_memory(project=project, content=TEN, tags=["src/billing/**"])
    services.memories_archive(memory_ids=[archived.pk], actor=reviewer_actor)
    newer = make_memory(project=project, content=THIRTY, tags=["src/billing/**"])
    assert not MemoryPair.objects.exists()  # an archived memory is no candidate
    services.memories_restore(memory_ids=[archived.pk], actor=reviewer_actor)
    assert not MemoryPair.objects.exists()
    find_conflicts()
    assert open_pair(archived, newer).kind == "conflict"
