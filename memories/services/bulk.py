"""Bulk edits over every memory a filter matches, as a background job (memories.models.bulk).

* ``bulk_edit_start``: the job and a snapshot of the ids the filter matches, taken by ONE
  ``INSERT ... SELECT`` from the filter's own SQL, capped by ``BULK_EDIT_MAX_MEMORIES``
  (over the cap, nothing is kept and the person is told to narrow the filter). A filter
  that matches a memory the person may not review (another project's, a global one
  without the global reviewer's permission) is refused as a whole: nothing is skipped
  silently. The job is queued once the snapshot commits.
* ``bulk_edit_run``: the job's batches (``BULK_EDIT_BATCH_SIZE`` ids each), each in its own
  transaction: the job row locked (so that a twin run waits, then finds the batch done),
  the memories changed through the services of the action (each with its history row,
  whose reason names the job), the items marked with what became of them and the history
  row that changed them, and the progress counted. Safe to run again: it goes on from the
  first item not done. A memory whose project the person no longer reviews, or that a
  service refuses (a rule of the store), fails alone; the others go on.
* ``bulk_edit_undo``: one undo for the whole job, as another job: every memory it changed
  goes back through its history row (``memories_undo``), unless it changed since. A job is
  undone once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from memories.actors import Actor
from memories.locks import retried_call
from memories.models import (
    BulkAction,
    BulkEdit,
    BulkEditItem,
    BulkStatus,
    ItemState,
    Memory,
    MemoryEvent,
    Project,
    Scope,
)
from memories.secrets import SecretsPolicy
from memories.services.changes import ChangeResult
from memories.services.memories import (
    CHOSEN_TIERS,
    memories_archive,
    memories_expire,
    memories_retag,
    memories_set_pinned,
    memories_set_tier,
)
from memories.services.restores import BULK_UNDOABLE, memories_undo
from memories.services.reviews import memories_approve
from memories.services.validation import text_fields

ITEMS = BulkEditItem._meta.db_table
MEMORIES = Memory._meta.db_table
# What the service of an action refuses for one memory (the others of its batch go on).
REFUSALS = (ValidationError, PermissionDenied)
# The parameters a person gives, by action.
TAG_LISTS = ("add", "remove")


# --- starting --------------------------------------------------------------------------------


def bulk_edit_start(
    *,
    memories: QuerySet[Memory],
    action: str,
    actor: Actor,
    project: Project | None = None,
    parameters: Mapping[str, Any] | None = None,
    described: str = "",
    enqueue: bool = True,
) -> BulkEdit:
    """A job that applies ``action`` to every memory of ``memories`` (a filtered queryset),
    queued once its snapshot commits (``enqueue=False``: the caller runs it, as the
    benchmark does). ``described``: the filter as the person sees it.

    Queries: the job, the snapshot (one statement), the owners of what it covers, the total.
    """
    if not actor.is_human or actor.user is None:
        raise PermissionDenied("A bulk edit is a person's act: sign in as a reviewer.")
    if action not in BulkAction.values or action == BulkAction.UNDO:
        raise ValidationError({"action": f"{action!r} is not a bulk edit."})
    chosen = _parameters(action, parameters or {})
    cap = settings.BULK_EDIT_MAX_MEMORIES
    matched, matched_params = memories.order_by().values("id").query.sql_with_params()
    with transaction.atomic():
        job = BulkEdit.objects.create(
            project=project,
            action=action,
            parameters={**chosen, "filter": described},
            actor=actor.user,
            actor_label=actor.label,
        )
        with connection.cursor() as cursor:
            # The snapshot: one set-based statement, whatever the number of memories. Its
            # items are the job's project's: the one given, or the one project (if any) whose
            # memories they all are, as the job becomes below.
            cursor.execute(
                f"WITH matched AS MATERIALIZED ("
                f"SELECT matched.id FROM ({matched}) AS matched LIMIT %s"
                "), owners AS ("
                "SELECT DISTINCT CASE WHEN m.scope = %s THEN NULL ELSE m.project_id END AS owner"
                f" FROM matched JOIN {MEMORIES} m ON m.id = matched.id"
                f") INSERT INTO {ITEMS} (project_id, job_id, memory_id, state, error)"
                " SELECT coalesce(%s::bigint, (SELECT min(owner) FROM owners HAVING count(*) = 1)),"
                " %s, matched.id, %s, '' FROM matched",
                [*matched_params, cap + 1, Scope.GLOBAL, job.project_id, job.pk, ItemState.PENDING],
            )
            total = cursor.rowcount
        if total > cap:
            raise ValidationError(
                f"The filter matches more than {cap:,} memories, the most one bulk edit "
                "changes (BULK_EDIT_MAX_MEMORIES): narrow the filter (a type, a tag, a "
                "review status) and edit them in parts."
            )
        if total == 0:
            raise ValidationError("No memory matches the filter: nothing to change.")
        owners = _require_reviewer_of_every(actor, job)
        if project is None and len(owners) == 1:
            # All of one project's (the admin's selection, mostly): the job is that project's,
            # as its items are already.
            job.project_id = next(iter(owners))
        job.total = total
        job.save(update_fields=["total", "project"])
        if enqueue:
            transaction.on_commit(lambda: _enqueue(job.pk))
    return job


def _parameters(action: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The action's parameters, checked as its service would check them."""
    if action == BulkAction.RETAG:
        lists = {}
        for name in TAG_LISTS:
            value = given.get(name) or []
            if isinstance(value, str):
                value = [tag.strip() for tag in value.split(",")]
            lists[name] = [str(tag).strip() for tag in value if str(tag).strip()]
        if not lists["add"] and not lists["remove"]:
            raise ValidationError({"add": "Name tags to add, to remove, or both."})
        if lists["add"]:
            # Tags that go to many memories: a secret among them is refused, never redacted.
            lists["add"] = text_fields(SecretsPolicy.REJECT, tags=lists["add"])[0]["tags"]
        return lists
    if action == BulkAction.SET_TIER:
        tier = given.get("tier")
        if tier not in CHOSEN_TIERS:
            raise ValidationError({"tier": "Choose hot, warm or cold (archiving freezes)."})
        return {"tier": str(tier)}
    return {}


def job_owners(job: BulkEdit) -> set[int | None]:
    """The projects whose roles govern the memories a job covers (None: global ones)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT CASE WHEN m.scope = %s THEN NULL ELSE m.project_id END"
            f" FROM {ITEMS} i JOIN {MEMORIES} m ON m.id = i.memory_id WHERE i.job_id = %s",
            [Scope.GLOBAL, job.pk],
        )
        return {row[0] for row in cursor.fetchall()}


def reviews_every_owner(actor: Actor, job: BulkEdit) -> bool:
    """Whether ``actor`` reviews every project (and the global memories) a job covers."""
    return all(actor.can_review(owner) for owner in job_owners(job))


def _require_reviewer_of_every(actor: Actor, job: BulkEdit) -> set[int | None]:
    """The whole job is refused if it covers a memory the person may not review; the
    projects it covers (None: global memories) otherwise."""
    owners = job_owners(job)
    refused = [owner for owner in owners if not actor.can_review(owner)]
    if refused:
        names = sorted(
            "global memories" if owner is None else f"project {owner}" for owner in refused
        )
        raise PermissionDenied(
            "The filter matches memories you do not review ("
            + ", ".join(names)
            + "): narrow it to the projects where you are a reviewer; nothing was changed."
        )
    return owners


def _enqueue(job_id: int) -> None:
    from memories.tasks import run_bulk_edit

    run_bulk_edit.delay(job_id)


# --- undoing ---------------------------------------------------------------------------------


def bulk_edit_undo(*, job: BulkEdit, actor: Actor, enqueue: bool = True) -> BulkEdit:
    """The job that takes back every change ``job`` made, queued once it commits. Refused
    for a job still running, for an undo, and for a job undone already (or being undone)."""
    if not actor.is_human or actor.user is None:
        raise PermissionDenied("An undo is a person's act: sign in as a reviewer.")
    with transaction.atomic():
        original = BulkEdit.objects.select_for_update(no_key=True).get(pk=job.pk)
        if original.action == BulkAction.UNDO:
            raise ValidationError("An undo is not undone: edit the memories again instead.")
        if (
            original.status == BulkStatus.UNDONE
            or BulkEdit.objects.filter(undo_of=original).exists()
        ):
            raise ValidationError(
                f"Bulk edit #{original.pk} is already undone (or being undone): "
                "a bulk edit is undone once."
            )
        if not original.finished:
            raise ValidationError(f"Bulk edit #{original.pk} is still running: undo it once done.")
        undo = BulkEdit.objects.create(
            project=original.project,
            action=BulkAction.UNDO,
            undo_of=original,
            parameters={"of": original.pk, "action": original.action},
            actor=actor.user,
            actor_label=actor.label,
        )
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {ITEMS} (project_id, job_id, memory_id, state, error)"
                f" SELECT %s, %s, memory_id, %s, '' FROM {ITEMS}"
                " WHERE job_id = %s AND event_id IS NOT NULL",
                [undo.project_id, undo.pk, ItemState.PENDING, original.pk],
            )
            undo.total = cursor.rowcount
        _require_reviewer_of_every(actor, undo)
        if undo.total == 0:
            # Nothing was changed: done at once.
            undo.status = BulkStatus.DONE
            undo.started_at = undo.finished_at = timezone.now()
            original.status = BulkStatus.UNDONE
            original.save(update_fields=["status"])
        undo.save(update_fields=["total", "status", "started_at", "finished_at"])
        if undo.total and enqueue:
            transaction.on_commit(lambda: _enqueue(undo.pk))
    return undo


# --- running ---------------------------------------------------------------------------------


@dataclass
class _Outcome:
    """What became of each memory of a batch."""

    changed: dict[int, int | None] = field(default_factory=dict)  # memory: its history row
    unchanged: list[int] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)  # memory: why


def bulk_edit_run(
    *,
    job_id: int,
    batch_size: int | None = None,
    seconds: float | None = None,
    batches: int | None = None,
) -> BulkEdit:
    """Run a job's batches until it is done, ``seconds`` have passed or ``batches`` ran
    (it goes on from there when run again), and return it as it then is."""
    size = batch_size or settings.BULK_EDIT_BATCH_SIZE
    deadline = None if seconds is None else time.monotonic() + seconds
    BulkEdit.objects.filter(pk=job_id, status=BulkStatus.QUEUED).update(
        status=BulkStatus.RUNNING, started_at=timezone.now()
    )
    ran = 0
    while batches is None or ran < batches:
        if deadline is not None and time.monotonic() >= deadline:
            break
        if not retried_call(_run_batch, job_id, size):
            break
        ran += 1
    return BulkEdit.objects.get(pk=job_id)


def bulk_edit_fail(*, job_id: int, error: str) -> None:
    """The job stopped for a reason of its own (not a memory's): kept as it got, with why."""
    BulkEdit.objects.filter(pk=job_id, status__in=[BulkStatus.QUEUED, BulkStatus.RUNNING]).update(
        status=BulkStatus.FAILED, error=error[:2000], finished_at=timezone.now()
    )


def _run_batch(job_id: int, size: int) -> bool:
    """One batch in one transaction; whether there may be more."""
    with transaction.atomic():
        job = (
            BulkEdit.objects.select_for_update(no_key=True, of=("self",))
            .select_related("actor")
            .get(pk=job_id)
        )
        if job.status != BulkStatus.RUNNING:
            return False
        ids = list(
            BulkEditItem.objects.filter(job=job, state=ItemState.PENDING)
            .order_by("memory_id")
            .values_list("memory_id", flat=True)[:size]
        )
        if not ids:
            _finish(job)
            return False
        if job.actor is None or not job.actor.is_active:
            raise PermissionDenied("The person who started it can no longer sign in.")
        outcome = _apply(job, Actor.for_user(job.actor), ids)
        _mark(job, outcome)
        job.done += len(outcome.changed) + len(outcome.unchanged) + len(outcome.missing)
        job.changed += len(outcome.changed)
        job.failed += len(outcome.failed)
        job.save(update_fields=["done", "changed", "failed"])
    return True


def _finish(job: BulkEdit) -> None:
    job.status = BulkStatus.DONE
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "finished_at"])
    if job.undo_of_id is not None:
        BulkEdit.objects.filter(pk=job.undo_of_id).update(status=BulkStatus.UNDONE)


def _apply(job: BulkEdit, actor: Actor, ids: list[int]) -> _Outcome:
    outcome = _Outcome()
    owners = {
        pk: None if scope == Scope.GLOBAL else project_id
        for pk, project_id, scope in Memory.objects.filter(pk__in=ids).values_list(
            "pk", "project_id", "scope"
        )
    }
    decided = _decided_since(job, [pk for pk in ids if pk in owners])
    allowed = []
    for pk in ids:
        if pk not in owners:
            outcome.missing.append(pk)
        elif not actor.can_review(owners[pk]):
            outcome.failed[pk] = "you no longer review its project"
        elif pk in decided:
            outcome.failed[pk] = f"{decided[pk]} changed it since this edit began; left as is"
        else:
            allowed.append(pk)
    if not allowed:
        return outcome
    if job.action == BulkAction.UNDO:
        _undo_batch(job, actor, allowed, outcome)
        return outcome
    change = _change(job, actor)
    try:
        with transaction.atomic():
            results = [change(allowed)]
    except REFUSALS:
        # One memory the store refuses fails alone: the batch again, one memory at a time.
        results = []
        for pk in allowed:
            try:
                with transaction.atomic():
                    results.append(change([pk]))
            except REFUSALS as error:
                outcome.failed[pk] = _text(error)
    for result in results:
        for event in result.events:
            outcome.changed[event.memory_id] = event.pk
        outcome.unchanged.extend(result.unchanged_ids)
        outcome.missing.extend(result.missing_ids)
    return outcome


def _decided_since(job: BulkEdit, ids: list[int]) -> dict[int, str]:
    """The memories a person or an agent changed after the job took its snapshot (a
    reviewer's rejection, an edit), with who: a job over a filter never overturns a decision
    newer than its own. Changes of the lifecycle jobs (decay, tiers) do not count, nor this
    job's own (an undo's job changes what its job changed). Through event_memory_recent_idx."""
    if not ids:
        return {}
    rows = (
        MemoryEvent.objects.filter(
            Q(actor_user__isnull=False) | Q(actor_api_key__isnull=False),
            memory_id__in=ids,
            created_at__gt=job.created_at,
        )
        .exclude(reason__regex=rf"{job.reason}([^0-9]|$)")  # its own rows ("archived (…)")
        .values_list("memory_id", "actor_label")
    )
    return dict(rows)


def _change(job: BulkEdit, actor: Actor) -> Callable[[list[int]], ChangeResult]:
    """The service of the job's action over a batch of ids."""
    reason = job.reason
    given = job.parameters
    services: dict[str, Callable[[list[int]], ChangeResult]] = {
        BulkAction.APPROVE: lambda ids: memories_approve(
            memory_ids=ids, actor=actor, reason=reason
        ),
        BulkAction.ARCHIVE: lambda ids: memories_archive(
            memory_ids=ids, actor=actor, reason=reason
        ),
        BulkAction.EXPIRE: lambda ids: memories_expire(memory_ids=ids, actor=actor, reason=reason),
        BulkAction.PIN: lambda ids: memories_set_pinned(
            memory_ids=ids, pinned=True, actor=actor, reason=reason
        ),
        BulkAction.UNPIN: lambda ids: memories_set_pinned(
            memory_ids=ids, pinned=False, actor=actor, reason=reason
        ),
        BulkAction.RETAG: lambda ids: memories_retag(
            memory_ids=ids,
            add=given.get("add", []),
            remove=given.get("remove", []),
            actor=actor,
            reason=reason,
        ),
        BulkAction.SET_TIER: lambda ids: memories_set_tier(
            memory_ids=ids, tier=given.get("tier", ""), actor=actor, reason=reason
        ),
    }
    return services[job.action]


def _undo_batch(job: BulkEdit, actor: Actor, ids: list[int], outcome: _Outcome) -> None:
    """The history rows the undone job wrote for these memories, taken back."""
    rows = dict(
        BulkEditItem.objects.filter(job_id=job.undo_of_id, memory_id__in=ids).values_list(
            "memory_id", "event_id"
        )
    )
    undone = memories_undo(
        event_ids=[event for event in rows.values() if event is not None],
        actor=actor,
        actions=BULK_UNDOABLE,
        reason=f"undo of bulk edit #{job.undo_of_id} ({job.reason})",
    )
    for pk in undone.undone:
        outcome.changed[pk] = None
    for pk, why in undone.refused:
        if why == "it no longer exists":
            outcome.missing.append(pk)
        else:
            outcome.failed[pk] = why
    settled = set(undone.undone) | {pk for pk, _ in undone.refused}
    outcome.unchanged.extend(pk for pk in ids if pk not in settled)


def _mark(job: BulkEdit, outcome: _Outcome) -> None:
    """Each item of the batch marked with what became of its memory: one statement."""
    rows: list[tuple[int, str, int | None, str]] = [
        *((pk, ItemState.CHANGED, event, "") for pk, event in outcome.changed.items()),
        *((pk, ItemState.UNCHANGED, None, "") for pk in outcome.unchanged),
        *((pk, ItemState.MISSING, None, "") for pk in outcome.missing),
        *((pk, ItemState.FAILED, None, why) for pk, why in outcome.failed.items()),
    ]
    rows.sort()
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {ITEMS} i SET state = v.state, event_id = v.event_id, error = v.error"
            " FROM unnest(%s::bigint[], %s::text[], %s::bigint[], %s::text[])"
            " AS v(memory_id, state, event_id, error)"
            " WHERE i.job_id = %s AND i.memory_id = v.memory_id",
            [
                [row[0] for row in rows],
                [str(row[1]) for row in rows],
                [row[2] for row in rows],
                [row[3] for row in rows],
                job.pk,
            ],
        )


def _text(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(error.messages)[:500]
    return str(error)[:500]
