"""The governance rules of DESIGN.md section 3 and the services that own every write."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
import tiktoken
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from assembly.selection import memories_for_task
from memories import services
from memories.actors import Actor
from memories.models import (
    EventAction,
    Memory,
    MemoryEvent,
    ReviewStatus,
    RunStatus,
    Scope,
)

pytestmark = pytest.mark.django_db


def events(memory: Memory, action: str | None = None) -> list[MemoryEvent]:
    found = MemoryEvent.objects.filter(memory_id=memory.pk).order_by("id")
    return list(found.filter(action=action) if action else found)


# --- create -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "confidence"), [("human", 1.0), ("run", 0.5), ("learning", 0.3)]
)
def test_initial_confidence_follows_the_source(make_memory, source, confidence):
    assert make_memory(source=source).confidence == confidence


@pytest.mark.parametrize(
    ("memory_type", "days"),
    [("pattern", None), ("warning", 90), ("learning", 180), ("context", 30)],
)
def test_default_expiry_follows_the_type(project, system_actor, memory_type, days):
    now = timezone.now()
    memory = services.memory_create(
        project=project, type=memory_type, content="x", source="run", actor=system_actor, now=now
    )
    assert memory.expires_at == (None if days is None else now + timedelta(days=days))


def test_project_policy_overrides_the_default_expiry(project, system_actor):
    project.policy.expiry_days_warning = 7
    project.policy.expiry_days_pattern = 365
    project.policy.save()
    now = timezone.now()
    warning = services.memory_create(
        project=project, type="warning", content="w", source="run", actor=system_actor, now=now
    )
    pattern = services.memory_create(
        project=project, type="pattern", content="p", source="run", actor=system_actor, now=now
    )
    assert warning.expires_at == now + timedelta(days=7)
    assert pattern.expires_at == now + timedelta(days=365)


def test_caller_given_expiry_wins_and_none_means_never(project, system_actor):
    later = timezone.now() + timedelta(days=3)
    given = services.memory_create(
        project=project, type="context", content="c", source="run", actor=system_actor,
        expires_at=later,
    )  # fmt: skip
    never = services.memory_create(
        project=project, type="context", content="c", source="run", actor=system_actor,
        expires_at=None,
    )  # fmt: skip
    assert given.expires_at == later
    assert never.expires_at is None


def test_expiry_in_the_past_makes_a_memory_that_is_never_selected(project, system_actor):
    memory = services.memory_create(
        project=project, type="context", content="c", source="run", actor=system_actor,
        expires_at=timezone.now() - timedelta(seconds=1),
    )  # fmt: skip
    assert memory.active
    assert memories_for_task(project=project, write_scope=[]) == []


def test_naive_expiry_is_refused(project, system_actor):
    with pytest.raises(ValidationError) as error:
        services.memory_create(
            project=project, type="context", content="c", source="run", actor=system_actor,
            expires_at=datetime(2030, 1, 1),
        )  # fmt: skip
    assert "expires_at" in error.value.message_dict
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    "content",
    [
        "Full test suite required when modifying src/core/.",
        "Ünïcödé, 漢字, emoji 🧠🚀 and RTL: שלום",
        "code:\n```python\nfor i in range(10):\n    print(i)\n```",
    ],
)
def test_token_count_is_the_real_o200k_count(make_memory, content):
    expected = len(tiktoken.get_encoding("o200k_base").encode(content))
    assert make_memory(content=content).token_count == expected


def test_content_is_stripped_of_control_characters(make_memory):
    memory = make_memory(content="  keep\x00 this\x1b[31m line\r\nand this\t \x7f ")
    assert memory.content == "keep this[31m line\nand this"


def test_format_characters_of_real_text_are_kept(make_memory):
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # joined by zero-width joiners
    assert make_memory(content=f"Team {family}").content == f"Team {family}"


@pytest.mark.parametrize("content", ["", "   ", "\x00\x01\n\t"])
def test_empty_content_is_refused_and_nothing_stored(project, system_actor, content):
    with pytest.raises(ValidationError) as error:
        services.memory_create(
            project=project, type="pattern", content=content, source="run", actor=system_actor
        )
    assert "content" in error.value.message_dict
    assert not Memory.objects.exists()


def test_oversized_content_is_refused(project, system_actor, settings):
    settings.MEMORY_CONTENT_MAX_CHARS = 50
    with pytest.raises(ValidationError, match="limit is 50"):
        services.memory_create(
            project=project, type="pattern", content="x" * 51, source="run", actor=system_actor
        )
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("type", "rumour"),
        ("source", "oracle"),
        ("relevance_score", 1.5),
        ("relevance_score", -0.1),
        ("relevance_score", float("nan")),
        ("relevance_score", True),
        ("tags", "not-a-list"),
        ("tags", ["ok", ""]),
        ("tags", [f"t{i}" for i in range(21)]),
    ],
)
def test_invalid_fields_are_refused_with_the_field_named(project, system_actor, field, value):
    kwargs = {"type": "pattern", "content": "c", "source": "run", field: value}
    with pytest.raises(ValidationError) as error:
        services.memory_create(project=project, actor=system_actor, **kwargs)
    assert field in error.value.message_dict
    assert not Memory.objects.exists()


def test_source_run_of_another_project_is_refused(project, other_project, make_run, system_actor):
    foreign = make_run(project=other_project)
    with pytest.raises(ValidationError, match="another project"):
        services.memory_create(
            project=project, type="pattern", content="c", source="run", source_run=foreign,
            actor=system_actor,
        )  # fmt: skip


def test_tags_are_deduplicated_and_their_patterns_stored(make_memory):
    memory = make_memory(tags=[" src/core/** ", "auth", "auth"])
    assert memory.tags == ["src/core/**", "auth"]
    assert len(memory.tag_patterns) == 2


def test_create_writes_history(make_memory):
    memory = make_memory(content="remember this")
    (event,) = events(memory)
    assert event.action == EventAction.CREATED
    assert event.changes["content"] == [None, "remember this"]
    assert event.actor_label == "system:tests"


def test_human_memory_by_a_reviewer_is_approved_by_them(project, reviewer, reviewer_actor):
    memory = services.memory_create(
        project=project, type="pattern", content="c", source="human", actor=reviewer_actor
    )
    assert memory.review_status == ReviewStatus.APPROVED
    assert memory.approved_by == reviewer


def test_global_memory_waits_for_approval(system_actor, reviewer_actor):
    memory = services.memory_create(
        project=None, type="pattern", content="shared", source="run", actor=system_actor
    )
    assert memory.scope == Scope.GLOBAL
    assert not memory.active
    with pytest.raises(ValidationError, match="only through approval"):
        services.memories_set_active(memory_ids=[memory.pk], active=True, actor=system_actor)
    approved = services.memory_approve(memory=memory, actor=reviewer_actor)
    assert approved.active


# --- approve / reject -------------------------------------------------------------------------


def test_approve_sets_confidence_one_and_records_approver(make_memory, reviewer, reviewer_actor):
    memory = make_memory(source="learning")
    before = timezone.now()
    approved = services.memory_approve(memory=memory, actor=reviewer_actor)
    approved.refresh_from_db()
    assert approved.confidence == 1.0
    assert approved.review_status == ReviewStatus.APPROVED
    assert approved.approved_by == reviewer
    assert approved.approved_at >= before
    (event,) = events(memory, EventAction.APPROVED)
    assert event.changes["confidence"] == [0.3, 1.0]
    assert event.actor_user == reviewer


def test_approve_reactivates_a_deactivated_memory(make_memory, reviewer_actor, system_actor):
    memory = make_memory()
    services.memories_set_active(memory_ids=[memory.pk], active=False, actor=system_actor)
    assert services.memory_approve(memory=memory, actor=reviewer_actor).active


@pytest.mark.parametrize("who", ["system", "plain_user"])
def test_only_a_human_reviewer_may_approve_or_reject(make_memory, plain_user, who):
    memory = make_memory()
    actor = Actor.system("agent") if who == "system" else Actor.for_user(plain_user)
    with pytest.raises(PermissionDenied):
        services.memory_approve(memory=memory, actor=actor)
    with pytest.raises(PermissionDenied):
        services.memory_reject(memory=memory, actor=actor)
    memory.refresh_from_db()
    assert memory.review_status == ReviewStatus.PENDING
    assert memory.confidence == 0.5


def test_reject_deactivates_and_records(make_memory, reviewer_actor):
    memory = make_memory()
    rejected = services.memory_reject(memory=memory, actor=reviewer_actor, reason="wrong")
    rejected.refresh_from_db()
    assert not rejected.active
    assert rejected.review_status == ReviewStatus.REJECTED
    (event,) = events(memory, EventAction.REJECTED)
    assert event.reason == "wrong"
    assert event.changes["active"] == [True, False]


# --- update, pin, activate, expiry, type, delete ----------------------------------------------


def test_update_recomputes_derived_fields_and_records_before_and_after(make_memory, system_actor):
    memory = make_memory(content="short", tags=["a"])
    updated = services.memory_update(
        memory=memory, actor=system_actor, reason="clarify",
        content="a much longer content than before", tags=["src/**"], relevance_score=0.9,
    )  # fmt: skip
    updated.refresh_from_db()
    encoding = tiktoken.get_encoding("o200k_base")
    assert updated.token_count == len(encoding.encode("a much longer content than before"))
    assert updated.tag_patterns == ["^src/.*$"]
    assert updated.content_hash != memory.content_hash
    (event,) = events(memory, EventAction.UPDATED)
    assert event.changes["content"] == ["short", "a much longer content than before"]
    assert event.changes["tags"] == [["a"], ["src/**"]]
    assert event.changes["relevance_score"] == [0.5, 0.9]
    assert event.reason == "clarify"


def test_update_with_no_change_writes_no_history(make_memory, system_actor):
    memory = make_memory(content="same")
    services.memory_update(memory=memory, actor=system_actor, content="same")
    assert [e.action for e in events(memory)] == [EventAction.CREATED]


def test_update_refuses_fields_it_does_not_own(make_memory, system_actor):
    memory = make_memory()
    with pytest.raises(ValidationError):
        services.memory_update(memory=memory, actor=system_actor, confidence=1.0)


def test_invalid_update_changes_nothing(make_memory, system_actor):
    memory = make_memory(content="original")
    with pytest.raises(ValidationError):
        services.memory_update(memory=memory, actor=system_actor, content="new", tags=[""])
    memory.refresh_from_db()
    assert memory.content == "original"


def test_pin_unpin_activate_deactivate_are_recorded(make_memory, system_actor):
    memory = make_memory()
    services.memories_set_pinned(memory_ids=[memory.pk], pinned=True, actor=system_actor)
    services.memories_set_pinned(memory_ids=[memory.pk], pinned=False, actor=system_actor)
    services.memories_set_active(memory_ids=[memory.pk], active=False, actor=system_actor)
    services.memories_set_active(memory_ids=[memory.pk], active=True, actor=system_actor)
    assert [e.action for e in events(memory)][1:] == [
        EventAction.PINNED,
        EventAction.UNPINNED,
        EventAction.DEACTIVATED,
        EventAction.ACTIVATED,
    ]


def test_extend_expiry_counts_from_now_when_already_past(make_memory, system_actor):
    now = timezone.now()
    future = make_memory(type="context")
    past = make_memory(type="context")
    never = make_memory(type="pattern")
    Memory.objects.filter(pk=past.pk).update(expires_at=now - timedelta(days=5))
    future_expiry = future.expires_at
    result = services.memories_extend_expiry(
        memory_ids=[future.pk, past.pk, never.pk], days=30, actor=system_actor, now=now
    )
    assert {m.pk for m in result.changed} == {future.pk, past.pk}
    assert result.unchanged_ids == [never.pk]
    future.refresh_from_db()
    past.refresh_from_db()
    assert future.expires_at == future_expiry + timedelta(days=30)
    assert past.expires_at == now + timedelta(days=30)


def test_clear_expiry_and_change_type(make_memory, system_actor):
    memory = make_memory(type="warning")
    services.memories_clear_expiry(memory_ids=[memory.pk], actor=system_actor)
    services.memories_change_type(memory_ids=[memory.pk], type="pattern", actor=system_actor)
    memory.refresh_from_db()
    assert memory.expires_at is None
    assert memory.type == "pattern"
    with pytest.raises(ValidationError):
        services.memories_change_type(memory_ids=[memory.pk], type="nope", actor=system_actor)


def test_deleted_memory_keeps_its_history(make_memory, system_actor):
    memory = make_memory(content="to be deleted")
    services.memories_delete(memory_ids=[memory.pk], actor=system_actor, reason="obsolete")
    assert not Memory.objects.filter(pk=memory.pk).exists()
    actions = [e.action for e in events(memory)]
    assert actions == [EventAction.CREATED, EventAction.DELETED]
    assert events(memory)[-1].changes["content"] == ["to be deleted", None]


def test_bulk_change_runs_a_fixed_number_of_queries(
    make_memory, system_actor, django_assert_num_queries
):
    ids = [make_memory().pk for _ in range(30)]
    # savepoint, lock-and-read, UPDATE, INSERT events, release savepoint
    with django_assert_num_queries(5):
        result = services.memories_set_pinned(memory_ids=ids, pinned=True, actor=system_actor)
    assert len(result.changed) == 30


# --- run outcome ------------------------------------------------------------------------------


def given_run(make_run, project, memories):
    run = make_run(project=project)
    services.run_give_memories(run=run, ranked=[(m.pk, 0.0) for m in memories])
    return run


def set_confidence(memory, value):
    Memory.objects.filter(pk=memory.pk).update(confidence=value)


def test_success_raises_confidence_of_every_given_memory(
    project, make_memory, make_run, system_actor
):
    given = [make_memory(project=project), make_memory(project=project, source="learning")]
    bystander = make_memory(project=project)
    run = given_run(make_run, project, given)
    result = services.run_record_outcome(run=run, outcome="succeeded", actor=system_actor)
    assert result.recorded
    assert [Memory.objects.get(pk=m.pk).confidence for m in given] == [0.6, 0.4]
    assert Memory.objects.get(pk=bystander.pk).confidence == 0.5
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    assert run.finished_at is not None
    (event,) = events(given[0], EventAction.OUTCOME)
    assert event.run == run
    assert event.changes["confidence"] == [0.5, 0.6]


def test_failure_lowers_confidence(project, make_memory, make_run, system_actor):
    memory = make_memory(project=project)
    services.run_record_outcome(
        run=given_run(make_run, project, [memory]), outcome="failed", actor=system_actor
    )
    assert Memory.objects.get(pk=memory.pk).confidence == 0.4


def test_confidence_is_clamped_to_the_unit_interval(project, make_memory, make_run, system_actor):
    high = make_memory(project=project, source="human")
    low = make_memory(project=project)
    set_confidence(low, 0.05)
    services.run_record_outcome(
        run=given_run(make_run, project, [high]), outcome="succeeded", actor=system_actor
    )
    services.run_record_outcome(
        run=given_run(make_run, project, [low]), outcome="failed", actor=system_actor
    )
    assert Memory.objects.get(pk=high.pk).confidence == 1.0
    assert Memory.objects.get(pk=low.pk).confidence == 0.0
    assert not events(high, EventAction.OUTCOME)  # nothing changed at the ceiling


def test_below_point_two_becomes_inactive_but_exactly_point_two_stays(
    project, make_memory, make_run, system_actor
):
    stays = make_memory(project=project)
    drops = make_memory(project=project)
    set_confidence(stays, 0.3)
    set_confidence(drops, 0.25)
    services.run_record_outcome(
        run=given_run(make_run, project, [stays, drops]), outcome="failed", actor=system_actor
    )
    stays.refresh_from_db()
    drops.refresh_from_db()
    assert (stays.confidence, stays.active) == (0.2, True)
    assert (drops.confidence, drops.active) == (0.15, False)


def test_success_does_not_reactivate(project, make_memory, make_run, system_actor):
    memory = make_memory(project=project)
    set_confidence(memory, 0.1)
    Memory.objects.filter(pk=memory.pk).update(active=False)
    services.run_record_outcome(
        run=given_run(make_run, project, [memory]), outcome="succeeded", actor=system_actor
    )
    memory.refresh_from_db()
    assert (memory.confidence, memory.active) == (0.2, False)


def test_recording_the_same_outcome_twice_changes_nothing(
    project, make_memory, make_run, system_actor
):
    memory = make_memory(project=project)
    run = given_run(make_run, project, [memory])
    services.run_record_outcome(run=run, outcome="succeeded", actor=system_actor)
    again = services.run_record_outcome(run=run, outcome="succeeded", actor=system_actor)
    assert not again.recorded
    assert Memory.objects.get(pk=memory.pk).confidence == 0.6
    assert len(events(memory, EventAction.OUTCOME)) == 1


def test_a_different_outcome_for_a_finished_run_is_a_conflict(
    project, make_memory, make_run, system_actor
):
    memory = make_memory(project=project)
    run = given_run(make_run, project, [memory])
    services.run_record_outcome(run=run, outcome="succeeded", actor=system_actor)
    with pytest.raises(services.Conflict, match="already finished as succeeded"):
        services.run_record_outcome(run=run, outcome="failed", actor=system_actor)
    assert Memory.objects.get(pk=memory.pk).confidence == 0.6


def test_outcome_must_be_succeeded_or_failed(project, make_run, system_actor):
    with pytest.raises(ValidationError):
        services.run_record_outcome(
            run=make_run(project=project), outcome="running", actor=system_actor
        )


def test_a_finished_run_can_be_given_nothing_more(project, make_memory, make_run, system_actor):
    run = given_run(make_run, project, [])
    services.run_record_outcome(run=run, outcome="failed", actor=system_actor)
    with pytest.raises(services.Conflict):
        services.run_give_memories(run=run, ranked=[(make_memory(project=project).pk, 0.0)])


def test_run_start_validates_and_cleans_scope(project, system_actor):
    run, created = services.run_start(
        project=project, external_id=" r-1 ", write_scope=["src/**", "src/**"], actor=system_actor
    )
    assert created
    assert (run.external_id, run.write_scope, run.status) == ("r-1", ["src/**"], "running")
    with pytest.raises(ValidationError):
        services.run_start(project=project, external_id="  ", actor=system_actor)


def test_starting_a_run_again_returns_it_or_conflicts(project, system_actor):
    run, _ = services.run_start(
        project=project, external_id="r", task_title="t", actor=system_actor
    )
    again, created = services.run_start(
        project=project, external_id="r", task_title="t", actor=system_actor
    )
    assert (again.pk, created) == (run.pk, False)
    with pytest.raises(services.Conflict):
        services.run_start(project=project, external_id="r", task_title="other", actor=system_actor)
