"""Bulk edits over a whole filter (memories.services.bulk): the snapshot is one statement and
capped, every action changes every memory it covers in batches with one history row each
(naming the job), progress advances batch by batch, a run again goes on where it stopped,
one undo takes the whole job back and a second is refused, and a person edits only what
they review."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from config.celery import app
from memories import services
from memories.actors import Actor
from memories.models import (
    BulkEdit,
    BulkEditItem,
    BulkStatus,
    ItemState,
    Membership,
    Memory,
    MemoryEvent,
    ReviewStatus,
    Role,
    Tier,
)
from memories.services import bulk
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

COUNT = 5
BATCH = 2  # three batches of five memories


@pytest.fixture
def memories(project, make_memory):
    made = [make_memory(project=project, tags=["src/core/**"]) for _ in range(COUNT)]
    return Memory.objects.filter(pk__in=[m.pk for m in made])


def start(memories, actor, action, **parameters):
    return bulk.bulk_edit_start(
        memories=memories, action=action, actor=actor, parameters=parameters
    )


def run(job, **options):
    return bulk.bulk_edit_run(job_id=job.pk, batch_size=BATCH, **options)


def history(job):
    return MemoryEvent.objects.filter(reason__contains=f"bulk edit #{job.pk}")


def test_the_snapshot_is_one_statement(memories, reviewer_actor):
    with CaptureQueriesContext(connection) as queries:
        job = start(memories.filter(type="pattern").order_by("-created_at"), reviewer_actor, "pin")
    inserts = [q["sql"] for q in queries if "bulkedititem" in q["sql"] and "INSERT" in q["sql"]]
    assert len(inserts) == 1
    assert "SELECT" in inserts[0]
    # The job, the snapshot, the owners it covers, the person's permissions, the total.
    statements = [q["sql"] for q in queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) <= 6, statements
    assert job.total == COUNT
    assert sorted(job.items.values_list("memory_id", flat=True)) == sorted(
        memories.values_list("pk", flat=True)
    )
    assert set(job.items.values_list("state", flat=True)) == {ItemState.PENDING}


def test_over_the_cap_is_refused_and_nothing_is_kept(memories, reviewer_actor, settings):
    settings.BULK_EDIT_MAX_MEMORIES = COUNT - 1
    with pytest.raises(ValidationError, match="narrow the filter"):
        start(memories, reviewer_actor, "pin")
    assert not BulkEdit.objects.exists()
    assert not BulkEditItem.objects.exists()
    settings.BULK_EDIT_MAX_MEMORIES = COUNT
    assert start(memories, reviewer_actor, "pin").total == COUNT


def test_nothing_matched_is_refused(memories, reviewer_actor):
    with pytest.raises(ValidationError, match="No memory matches"):
        start(memories.filter(type="warning"), reviewer_actor, "pin")


@pytest.mark.parametrize(
    ("action", "parameters", "check"),
    [
        ("approve", {}, lambda m: m.review_status == ReviewStatus.APPROVED and m.confidence == 1),
        ("archive", {}, lambda m: not m.active and m.tier == Tier.FROZEN and m.archived_at),
        ("expire", {}, lambda m: not m.active and m.expires_at <= timezone.now()),
        ("pin", {}, lambda m: m.pinned),
        (
            "retag",
            {"add": ["billing", "src/api/**"], "remove": ["src/core/**"]},
            lambda m: m.tags == ["billing", "src/api/**"] and "kw:billing" in m.tag_keys,
        ),
        ("set_tier", {"tier": "cold"}, lambda m: m.tier == Tier.COLD),
    ],
)
def test_each_action_changes_every_memory_in_batches_with_one_history_row_each(
    memories, reviewer_actor, action, parameters, check
):
    job = start(memories, reviewer_actor, action, **parameters)
    job = run(job, batches=1)
    assert (job.status, job.done, job.changed) == (BulkStatus.RUNNING, BATCH, BATCH)
    job = run(job)
    assert (job.status, job.total, job.done, job.changed, job.failed) == (
        BulkStatus.DONE,
        COUNT,
        COUNT,
        COUNT,
        0,
    )
    assert job.started_at <= job.finished_at
    assert all(check(memory) for memory in memories), action
    rows = history(job)
    assert sorted(rows.values_list("memory_id", flat=True)) == sorted(
        memories.values_list("pk", flat=True)
    )
    assert set(job.items.values_list("state", flat=True)) == {ItemState.CHANGED}
    assert set(job.items.values_list("event_id", flat=True)) == set(
        rows.values_list("pk", flat=True)
    )


def test_unpin_and_a_memory_already_so_is_left_alone(memories, reviewer_actor):
    first = memories.order_by("pk").first()
    services.memories_set_pinned(memory_ids=[first.pk], pinned=True, actor=reviewer_actor)
    job = run(start(memories, reviewer_actor, "unpin"))
    assert (job.done, job.changed) == (COUNT, 1)
    assert not memories.filter(pinned=True).exists()
    assert history(job).get().memory_id == first.pk


def test_progress_survives_a_stop_and_a_second_run_writes_nothing_twice(memories, reviewer_actor):
    job = start(memories, reviewer_actor, "pin")
    assert run(job, batches=1).done == BATCH
    assert run(job, batches=1).done == 2 * BATCH
    job = run(job)
    assert job.status == BulkStatus.DONE
    assert run(job).done == COUNT  # done: nothing more
    assert history(job).count() == COUNT


def test_a_memory_the_store_refuses_fails_alone(memories, reviewer_actor, settings):
    settings.MEMORY_MAX_TAGS = 2
    crowded = memories.order_by("pk")[1]
    services.memory_update(memory=crowded, actor=reviewer_actor, tags=["a", "b"])
    job = run(start(memories, reviewer_actor, "retag", add=["billing"]))
    assert (job.status, job.changed, job.failed, job.done) == (BulkStatus.DONE, COUNT - 1, 1, 4)
    item = job.items.get(memory_id=crowded.pk)
    assert item.state == ItemState.FAILED
    assert "tag" in item.error
    assert Memory.objects.get(pk=crowded.pk).tags == ["a", "b"]


def test_a_memory_deleted_meanwhile_is_counted_as_gone(memories, reviewer_actor):
    job = start(memories, reviewer_actor, "pin")
    gone = memories.order_by("pk").last()
    services.memories_delete(memory_ids=[gone.pk], actor=reviewer_actor)
    job = run(job)
    assert (job.status, job.done, job.changed) == (BulkStatus.DONE, COUNT, COUNT - 1)
    assert job.items.get(memory_id=gone.pk).state == ItemState.MISSING


@pytest.mark.parametrize(
    ("action", "parameters"),
    [
        ("approve", {}),
        ("archive", {}),
        ("expire", {}),
        ("pin", {}),
        ("retag", {"add": ["billing"], "remove": ["src/core/**"]}),
        ("set_tier", {"tier": "cold"}),
    ],
)
def test_one_undo_takes_the_whole_job_back_and_a_second_is_refused(
    memories, reviewer_actor, action, parameters
):
    fields = ["active", "pinned", "tier", "tags", "tag_keys", "tag_patterns", "review_status",
              "confidence", "approved_by", "approved_at", "archived_at", "expires_at"]  # fmt: skip
    before = {m.pk: {f: getattr(m, f) for f in fields} for m in memories}
    job = run(start(memories, reviewer_actor, action, **parameters))
    assert job.changed == COUNT
    undo = bulk.bulk_edit_undo(job=job, actor=reviewer_actor)
    assert (undo.status, undo.total, undo.undo_of_id) == (BulkStatus.QUEUED, COUNT, job.pk)
    with pytest.raises(ValidationError, match="undone once"):
        bulk.bulk_edit_undo(job=job, actor=reviewer_actor)
    undo = run(undo)
    assert (undo.status, undo.changed, undo.failed) == (BulkStatus.DONE, COUNT, 0)
    assert BulkEdit.objects.get(pk=job.pk).status == BulkStatus.UNDONE
    after = {m.pk: {f: getattr(m, f) for f in fields} for m in memories}
    assert after == before
    undone = MemoryEvent.objects.filter(action="undone", reason__contains=f"#{job.pk}")
    assert undone.count() == COUNT
    with pytest.raises(ValidationError, match="undone once"):
        bulk.bulk_edit_undo(job=BulkEdit.objects.get(pk=job.pk), actor=reviewer_actor)
    with pytest.raises(ValidationError, match="An undo is not undone"):
        bulk.bulk_edit_undo(job=undo, actor=reviewer_actor)


def test_items_carry_their_job_s_project_and_its_undo_s(
    project, other_project, make_memory, memories, reviewer_actor
):
    """A job of one project's memories is that project's, and so is each of its items (and
    its undo's): they live on its shard (docs/scaling.md). A job across projects has none."""
    job = run(start(memories, reviewer_actor, "pin"))
    assert job.project_id == project.pk
    assert set(job.items.values_list("project_id", flat=True)) == {project.pk}
    undo = bulk.bulk_edit_undo(job=job, actor=reviewer_actor)
    assert undo.project_id == project.pk
    assert set(undo.items.values_list("project_id", flat=True)) == {project.pk}
    theirs = make_memory(project=other_project)
    both = Memory.objects.filter(pk__in=[*memories.values_list("pk", flat=True), theirs.pk])
    across = start(both, reviewer_actor, "pin")
    assert across.project_id is None
    assert set(across.items.values_list("project_id", flat=True)) == {None}


def test_an_undo_leaves_a_memory_changed_since_and_says_why(memories, reviewer_actor):
    job = run(start(memories, reviewer_actor, "pin"))
    touched = memories.order_by("pk").first()
    services.memories_set_pinned(memory_ids=[touched.pk], pinned=False, actor=reviewer_actor)
    undo = run(bulk.bulk_edit_undo(job=job, actor=reviewer_actor))
    assert (undo.status, undo.changed, undo.failed) == (BulkStatus.DONE, COUNT - 1, 1)
    assert undo.items.get(memory_id=touched.pk).error == "it changed since"
    assert not memories.filter(pinned=True).exists()


def test_a_running_job_is_not_undone_yet(memories, reviewer_actor):
    job = run(start(memories, reviewer_actor, "pin"), batches=1)
    with pytest.raises(ValidationError, match="still running"):
        bulk.bulk_edit_undo(job=job, actor=reviewer_actor)


def _member(project, role):
    user = UserFactory()
    Membership.objects.create(user=user, project=project, role=role)
    return Actor.for_user(user)


def test_a_reviewer_of_one_project_cannot_edit_another_s(
    project, other_project, make_memory, memories
):
    theirs = make_memory(project=other_project)
    reviewer = _member(project, Role.REVIEWER)
    Membership.objects.create(user=reviewer.user, project=other_project, role=Role.VIEWER)
    spanning = Memory.objects.filter(pk__in=[*memories.values_list("pk", flat=True), theirs.pk])
    with pytest.raises(PermissionDenied, match=f"project {other_project.pk}"):
        start(spanning, reviewer, "pin")
    assert not BulkEdit.objects.exists()
    with pytest.raises(PermissionDenied):
        start(Memory.objects.filter(pk=theirs.pk), reviewer, "pin")
    viewer = _member(project, Role.VIEWER)
    with pytest.raises(PermissionDenied):
        start(memories, viewer, "pin")
    with pytest.raises(PermissionDenied):
        start(memories, Actor.system("tests"), "pin")
    assert not Memory.objects.filter(pinned=True).exists()
    # Within their project: yes.
    assert run(start(memories, reviewer, "pin")).changed == COUNT


def test_global_memories_only_for_global_reviewers(project, make_memory):
    proposal = make_memory(project=None, scope="global", content="Use UTC everywhere.")
    globals_ = Memory.objects.filter(pk=proposal.pk)
    with pytest.raises(PermissionDenied, match="global memories"):
        start(globals_, _member(project, Role.MAINTAINER), "approve")
    job = run(start(globals_, Actor.for_user(UserFactory.create(is_superuser=True)), "approve"))
    assert job.changed == 1


def test_a_role_lost_while_it_runs_fails_the_rest(memories, project):
    reviewer = _member(project, Role.REVIEWER)
    job = run(start(memories, reviewer, "pin"), batches=1)
    Membership.objects.filter(user=reviewer.user).update(role=Role.VIEWER)
    job = run(job)
    assert (job.status, job.changed, job.failed) == (BulkStatus.DONE, BATCH, COUNT - BATCH)
    assert memories.filter(pinned=True).count() == BATCH


def test_parameters_are_checked_before_anything_is_kept(memories, reviewer_actor):
    with pytest.raises(ValidationError, match="Name tags"):
        start(memories, reviewer_actor, "retag")
    with pytest.raises(ValidationError, match="hot, warm or cold"):
        start(memories, reviewer_actor, "set_tier", tier="frozen")
    with pytest.raises(ValidationError, match="not a bulk edit"):
        start(memories, reviewer_actor, "undo")
    with pytest.raises(ValidationError):
        start(memories, reviewer_actor, "retag", add=["AKIAIOSFODNN7EXAMPLE"])
    assert not BulkEdit.objects.exists()


def test_an_eager_celery_runs_the_job_when_the_snapshot_commits(
    memories, reviewer_actor, django_capture_on_commit_callbacks, settings
):
    settings.BULK_EDIT_BATCH_SIZE = BATCH
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            job = start(memories, reviewer_actor, "expire")
    finally:
        app.conf.task_always_eager = False
    job.refresh_from_db()
    assert (job.status, job.changed) == (BulkStatus.DONE, COUNT)
    assert not memories.filter(expires_at__gt=timezone.now() - timedelta(minutes=1)).filter(
        active=True
    )


def test_a_batch_given_the_same_values_is_written_in_one_update(memories, reviewer_actor):
    ids = list(memories.values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as queries:
        services.memories_set_pinned(memory_ids=ids, pinned=True, actor=reviewer_actor)
    updates = [
        q["sql"] for q in queries if (q["sql"] or "").startswith('UPDATE "project_memories"')
    ]
    assert len(updates) == 1
    assert "CASE" not in updates[0]
    assert memories.filter(pinned=True).count() == COUNT
    # Values that differ row by row: still no more statements than one bulk update.
    with CaptureQueriesContext(connection) as queries:
        services.memories_retag(memory_ids=ids[:2], add=["one"], actor=reviewer_actor)
        services.memories_retag(memory_ids=ids, add=["two"], actor=reviewer_actor)
    updates = [
        q["sql"] for q in queries if (q["sql"] or "").startswith('UPDATE "project_memories"')
    ]
    assert len(updates) == 2
    tags = dict(memories.values_list("pk", "tags"))
    assert [tags[pk] for pk in ids] == [
        ["src/core/**", "one", "two"],
        ["src/core/**", "one", "two"],
        *[["src/core/**", "two"]] * (COUNT - 2),
    ]


def test_a_decision_made_after_the_snapshot_is_never_overturned(project, memories, reviewer_actor):
    other = _member(project, Role.REVIEWER)
    job = start(memories.filter(review_status=ReviewStatus.PENDING), reviewer_actor, "approve")
    rejected = memories.order_by("pk").last()
    services.memory_reject(memory=rejected, actor=other, reason="wrong")
    job = run(job)
    rejected.refresh_from_db()
    assert rejected.review_status == ReviewStatus.REJECTED
    assert (job.changed, job.failed) == (COUNT - 1, 1)
    error = job.items.get(memory_id=rejected.pk).error
    assert other.label in error
    assert "since this edit began" in error
    # Its own history rows ("bulk edit #N") and the lifecycle jobs' changes do not count.
    again = start(memories.exclude(pk=rejected.pk), reviewer_actor, "pin")
    services.memories_set_tier(
        memory_ids=[m.pk for m in memories], tier=Tier.COLD, actor=Actor.system("tiers")
    )
    assert run(again).changed == COUNT - 1
