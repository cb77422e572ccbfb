"""Memories: created, edited, reviewed, pinned, expired, restored, deleted.

Every change of an existing memory ends in ``change_memories`` (one locked, set-based
primitive); every history row is built by memories.history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models, transaction
from django.utils import timezone

from memories import history
from memories.actors import Actor
from memories.locks import lock_memories, retried
from memories.models import (
    EventAction,
    Memory,
    MemoryEvent,
    MemoryType,
    Project,
    ReviewStatus,
    Run,
    Scope,
    Source,
    Tier,
)
from memories.secrets import SecretsPolicy
from memories.services.changes import ChangeResult, change_memories, one
from memories.services.validation import (
    aware_datetime,
    choice,
    default_expiry,
    scrubbed,
    scrubbed_for,
    secrets_mode,
    tag_fields,
    text_fields,
    unit_interval,
)

INITIAL_CONFIDENCE: dict[str, float] = {Source.HUMAN: 1.0, Source.RUN: 0.5, Source.LEARNING: 0.3}

_UNSET: Any = object()


@transaction.atomic
def memory_create(
    *,
    project: Project | None,
    type: str,
    content: str,
    source: str,
    actor: Actor,
    tags: Sequence[str] = (),
    relevance_score: float = 0.5,
    scope: str | None = None,
    source_run: Run | None = None,
    expires_at: datetime | None = _UNSET,
    summary: str | None = None,
    now: datetime | None = None,
) -> Memory:
    """Store a new memory with its initial confidence, default expiry and token count."""
    now = now or timezone.now()
    memory_type = choice(type, MemoryType, "type")
    memory_source = choice(source, Source, "source")
    scope = choice(scope or (Scope.PROJECT if project else Scope.GLOBAL), Scope, "scope")
    if scope == Scope.GLOBAL and project is not None:
        raise ValidationError({"scope": "A global memory belongs to no project."})
    if scope != Scope.GLOBAL and project is None:
        raise ValidationError({"scope": "A project or run memory needs a project."})
    if source_run is not None and (project is None or source_run.project_id != project.pk):
        raise ValidationError({"source_run": "The run belongs to another project."})
    if scope == Scope.RUN and source_run is None:
        raise ValidationError({"source_run": "A run-scoped memory needs the run it belongs to."})

    policy = project.policy if project else None
    if expires_at is _UNSET:
        expires_at = default_expiry(policy=policy, memory_type=memory_type, now=now)
    else:
        expires_at = aware_datetime(expires_at, "expires_at")

    approved = (
        memory_source == Source.HUMAN
        and scope != Scope.GLOBAL
        and actor.can_review(project.pk if project else None)
    )
    text, redacted = text_fields(secrets_mode(project), content=content, summary=summary, tags=tags)
    memory = Memory(
        project=project,
        scope=scope,
        type=memory_type,
        source=memory_source,
        source_run=source_run,
        relevance_score=unit_interval(relevance_score, "relevance_score"),
        confidence=INITIAL_CONFIDENCE[memory_source],
        # Global memories are written only through approval.
        active=scope != Scope.GLOBAL,
        expires_at=expires_at,
        review_status=ReviewStatus.APPROVED if approved else ReviewStatus.PENDING,
        approved_by=actor.user if approved else None,
        approved_at=now if approved else None,
        **text,
    )
    memory.full_clean(exclude=["search_vector", "match_keys"], validate_constraints=False)
    memory.save()
    history.record([history.created(memory, actor=actor, reason=redacted)], of_existing=False)
    return memory


_UPDATABLE = {"content", "summary", "tags", "relevance_score", "type", "expires_at"}


def memory_update(
    *, memory: Memory, actor: Actor, reason: str = "", now: datetime | None = None, **changes: Any
) -> Memory:
    """Edit what a memory says: content, summary, tags, relevance score, type, expiry."""
    unknown = set(changes) - _UPDATABLE
    if unknown:
        raise ValidationError(dict.fromkeys(unknown, "This field cannot be changed here."))
    now = now or timezone.now()
    text: dict[str, Any] = {}
    if "content" in changes or "summary" in changes:
        text |= {
            "content": changes.get("content", memory.content),
            "summary": changes.get("summary"),
        }
    if "tags" in changes:
        text["tags"] = changes["tags"]
    mode = secrets_mode(memory.project)
    values, redacted = text_fields(mode, **text)
    reason = " ".join(
        part for part in (scrubbed({"reason": reason}, mode)["reason"], redacted) if part
    )
    if "content" in values and values["content"] != memory.content:
        # New words are for compression to judge again.
        values["compressed_at"] = None
    if "relevance_score" in changes:
        values["relevance_score"] = unit_interval(changes["relevance_score"], "relevance_score")
    if "type" in changes:
        values["type"] = choice(changes["type"], MemoryType, "type")
    if "expires_at" in changes:
        values["expires_at"] = aware_datetime(changes["expires_at"], "expires_at")
    result = change_memories(
        memory_ids=[memory.pk],
        compute=lambda _memory: values,
        action=EventAction.UPDATED,
        actor=actor,
        reason=reason,
        now=now,
    )
    return one(result, memory)


def _require_reviewer(actor: Actor) -> None:
    if not actor.is_human:
        raise PermissionDenied("Approval and rejection are human acts: sign in as a reviewer.")


def _require_reviewer_of(actor: Actor, memory: Memory) -> None:
    """A person approves or rejects a memory only as a reviewer of its project (of global
    memories, for a global one)."""
    if not actor.can_review(memory.project_id if memory.scope != Scope.GLOBAL else None):
        where = "global memories" if memory.scope == Scope.GLOBAL else "its project"
        raise PermissionDenied(
            f"You need the reviewer role in {where} to approve or reject memory {memory.pk}."
        )


def memories_approve(
    *, memory_ids: Iterable[int], actor: Actor, now: datetime | None = None
) -> ChangeResult:
    """Human approval: confidence 1.0, approver and time recorded, active again."""
    _require_reviewer(actor)
    now = now or timezone.now()

    values = {
        "confidence": 1.0,
        "review_status": ReviewStatus.APPROVED,
        "approved_by": actor.user,
        "approved_at": now,
        "active": True,
        # A review settles a code change's doubt.
        "stale_at": None,
    }

    def compute(memory: Memory) -> dict[str, Any]:
        _require_reviewer_of(actor, memory)
        return values

    return change_memories(
        memory_ids=memory_ids,
        compute=compute,
        action=EventAction.APPROVED,
        actor=actor,
        now=now,
    )


def memory_approve(*, memory: Memory, actor: Actor) -> Memory:
    return one(memories_approve(memory_ids=[memory.pk], actor=actor), memory)


def memories_reject(
    *, memory_ids: Iterable[int], actor: Actor, reason: str = "", now: datetime | None = None
) -> ChangeResult:
    """Human rejection: the memory is set inactive and marked rejected. A secret in the
    reason is refused or redacted as the memories' projects say (``scrubbed_for``)."""
    _require_reviewer(actor)
    ids = sorted(set(memory_ids))
    reason = scrubbed_for({"reason": reason}, ids)["reason"]

    def compute(memory: Memory) -> dict[str, Any]:
        _require_reviewer_of(actor, memory)
        return {
            "review_status": ReviewStatus.REJECTED,
            "active": False,
            "approved_by": None,
            "approved_at": None,
        }

    return change_memories(
        memory_ids=ids,
        compute=compute,
        action=EventAction.REJECTED,
        actor=actor,
        reason=reason,
        now=now,
    )


def memory_reject(*, memory: Memory, actor: Actor, reason: str = "") -> Memory:
    return one(memories_reject(memory_ids=[memory.pk], actor=actor, reason=reason), memory)


FLAG_REF = "flagged"


def memory_flag(*, memory: Memory, actor: Actor, reason: str) -> Memory:
    """Someone (an agent, mostly) says the memory looks wrong or stale: it is flagged for
    re-review, as a code change flags it, with the reason in its history. Nothing else
    changes: a reviewer decides (an approval clears the flag). Flagging a flagged memory
    again keeps the first time it was flagged. A secret in the reason is refused or redacted
    as the project says."""
    reason = scrubbed_for({"reason": reason}, [memory.pk])["reason"]

    def compute(current: Memory) -> dict[str, Any]:
        if current.stale_at is not None and current.stale_ref == FLAG_REF:
            return {}
        return {"stale_at": timezone.now(), "stale_ref": FLAG_REF}

    result = change_memories(
        memory_ids=[memory.pk],
        compute=compute,
        action=EventAction.STALE,
        actor=actor,
        reason=reason,
    )
    return one(result, memory)


def memories_set_active(
    *, memory_ids: Iterable[int], active: bool, actor: Actor, reason: str = ""
) -> ChangeResult:
    def compute(memory: Memory) -> dict[str, Any]:
        if (
            active
            and memory.scope == Scope.GLOBAL
            and memory.review_status != ReviewStatus.APPROVED
        ):
            raise ValidationError(
                {"active": "A global memory becomes active only through approval."}
            )
        if active and memory.archived_at is not None:
            raise ValidationError(
                {"active": "This memory is archived: restore it to make it active again."}
            )
        return {"active": active}

    return change_memories(
        memory_ids=memory_ids,
        compute=compute,
        action=EventAction.ACTIVATED if active else EventAction.DEACTIVATED,
        actor=actor,
        reason=reason,
    )


def memories_set_pinned(*, memory_ids: Iterable[int], pinned: bool, actor: Actor) -> ChangeResult:
    return change_memories(
        memory_ids=memory_ids,
        compute=lambda _m: {"pinned": pinned},
        action=EventAction.PINNED if pinned else EventAction.UNPINNED,
        actor=actor,
    )


def memories_extend_expiry(
    *, memory_ids: Iterable[int], days: int, actor: Actor, now: datetime | None = None
) -> ChangeResult:
    """Push expiry ``days`` further: from the current expiry, or from now if it already passed.

    Memories that never expire stay that way.
    """
    now = now or timezone.now()

    def compute(memory: Memory) -> dict[str, Any]:
        if memory.expires_at is None:
            return {}
        return {"expires_at": max(memory.expires_at, now) + timedelta(days=days)}

    return change_memories(
        memory_ids=memory_ids,
        compute=compute,
        action=EventAction.UPDATED,
        actor=actor,
        reason=f"expiry extended by {days} days",
        now=now,
    )


def memories_clear_expiry(*, memory_ids: Iterable[int], actor: Actor) -> ChangeResult:
    return change_memories(
        memory_ids=memory_ids,
        compute=lambda _m: {"expires_at": None},
        action=EventAction.UPDATED,
        actor=actor,
        reason="expiry cleared: never expires",
    )


def memories_change_type(*, memory_ids: Iterable[int], type: str, actor: Actor) -> ChangeResult:
    memory_type = choice(type, MemoryType, "type")
    return change_memories(
        memory_ids=memory_ids,
        compute=lambda _m: {"type": memory_type},
        action=EventAction.UPDATED,
        actor=actor,
        reason=f"type changed to {memory_type}",
    )


def memories_promote(*, memory_ids: Iterable[int], actor: Actor) -> ChangeResult:
    """A run's scratch memory becomes the project's: the scratch cleanup leaves it alone."""
    return change_memories(
        memory_ids=memory_ids,
        compute=lambda memory: {"scope": Scope.PROJECT} if memory.scope == Scope.RUN else {},
        action=EventAction.UPDATED,
        actor=actor,
        reason="promoted from the run's scratch to the project",
    )


@retried
@transaction.atomic
def memories_restore(
    *, memory_ids: Iterable[int], actor: Actor, now: datetime | None = None
) -> ChangeResult:
    """Archived memories (evicted, merged, superseded or cleared run scratch) come back:
    active, warm,
    without the archive mark. One merged into another also takes back from the survivor what
    the merge gave it: its access count, and the tags that only it brought. Memories that are
    not archived are left as they are."""
    now = now or timezone.now()
    ids = sorted(set(memory_ids))
    # The survivors change too: locked with the restored ones, all in id order.
    survivors = Memory.objects.filter(id__in=ids, merged_into__isnull=False).values_list(
        "merged_into", flat=True
    )
    list(lock_memories({*ids, *(i for i in survivors if i is not None)}).values_list("id"))
    merged = list(
        Memory.objects.filter(id__in=ids, merged_into__isnull=False)
        .values_list("id", "merged_into", "access_count", "tags")
        .order_by("id")
    )
    restored = change_memories(
        memory_ids=ids,
        compute=lambda memory: (
            {
                "active": True,
                "tier": Tier.WARM,
                "archived_at": None,
                "merged_into": None,
                "superseded_by": None,
                "superseded_at": None,
                "superseded_actor": "",
            }
            if memory.archived_at is not None
            else {}
        ),
        action=EventAction.RESTORED,
        actor=actor,
        now=now,
    )
    gains: dict[int, tuple[int, set[str]]] = {}
    for memory_id, survivor_id, access_count, memory_tags in merged:
        assert survivor_id is not None
        event = history.merge_event(survivor_id, memory_id)
        tags_change = history.field_change(event, "tags") if event else None
        before = set(tags_change[0]) if tags_change else set()
        access, tags = gains.get(survivor_id, (0, set()))
        gains[survivor_id] = (access + access_count, tags | (set(memory_tags) - before))
    if gains:
        still_merged: dict[int | None, set[str]] = {}
        for survivor_id, merged_tags in Memory.objects.filter(merged_into__in=gains).values_list(
            "merged_into", "tags"
        ):
            still_merged.setdefault(survivor_id, set()).update(merged_tags)

        def give_back(survivor: Memory) -> dict[str, Any]:
            access, tags = gains[survivor.pk]
            keep = still_merged.get(survivor.pk, set())
            return {
                "access_count": max(0, survivor.access_count - access),
                **tag_fields([t for t in survivor.tags if t not in tags or t in keep]),
            }

        change_memories(
            memory_ids=gains,
            compute=give_back,
            action=EventAction.UPDATED,
            actor=actor,
            reason="gave back what a restored memory brought to the merge",
            now=now,
        )
    return restored


def memories_restore_content(*, memory_ids: Iterable[int], actor: Actor) -> ChangeResult:
    """Compressed memories get their original content back (from their last ``compressed``
    history row); compression leaves them alone from then on."""
    ids = sorted(set(memory_ids))
    originals = history.original_contents(ids)

    def compute(memory: Memory) -> dict[str, Any]:
        original = originals.get(memory.pk)
        if original is None or original == memory.content:
            return {}
        # Stored once already (secrets were dealt with then); redact anything found anyway.
        values = text_fields(SecretsPolicy.REDACT, content=original)[0]
        values["summary"] = memory.summary
        return values

    return change_memories(
        memory_ids=ids,
        compute=compute,
        action=EventAction.RESTORED,
        actor=actor,
        reason="original content restored",
    )


@retried
@transaction.atomic
def memories_delete(*, memory_ids: Iterable[int], actor: Actor, reason: str = "") -> int:
    """Delete memories; their history stays, closed by a ``deleted`` event with the last content."""
    # FOR UPDATE, not NO KEY: a DELETE needs it (in id order still: memories.locks).
    memories = list(
        Memory.objects.select_for_update(of=("self",))
        .filter(id__in=sorted(set(memory_ids)))
        .defer("search_vector", "match_keys")
        .order_by("id")
    )
    history.record(
        [history.deleted(memory, actor=actor, reason=reason) for memory in memories],
        of_existing=False,
    )
    Memory.objects.filter(id__in=[memory.pk for memory in memories]).delete()
    return len(memories)


# Changes a reviewer may take back at once from the page that made them.
UNDOABLE = (
    EventAction.APPROVED,
    EventAction.REJECTED,
    EventAction.PINNED,
    EventAction.UNPINNED,
)


@dataclass
class Undone:
    undone: list[int] = field(default_factory=list)  # memories put back
    refused: list[tuple[int, str]] = field(default_factory=list)  # (memory, why not)


@retried
def memories_undo(*, event_ids: Iterable[int], actor: Actor) -> Undone:
    """Take back changes through their history rows: each memory gets every field the row
    changed back to its value before, recorded as an ``undone`` row of its own. Exact: a
    memory changed since (its latest history row is another) is left as it is, and said so.

    Queries: the rows, a lock of their memories, their latest rows, then one change."""
    result = Undone()
    events = list(
        MemoryEvent.objects.filter(pk__in=set(event_ids), action__in=UNDOABLE).order_by("id")
    )
    if not events:
        return result
    with transaction.atomic():
        ids = sorted({event.memory_id for event in events})
        locked = {memory.pk: memory for memory in lock_memories(ids).only("id", "project", "scope")}
        latest = dict(
            MemoryEvent.objects.filter(memory_id__in=ids)
            .order_by("memory_id", "-id")
            .distinct("memory_id")
            .values_list("memory_id", "id")
        )
        before: dict[int, dict[str, Any]] = {}
        reasons: dict[int, str] = {}
        for event in events:
            memory = locked.get(event.memory_id)
            if memory is None:
                result.refused.append((event.memory_id, "it no longer exists"))
            elif latest.get(event.memory_id) != event.pk:
                result.refused.append((event.memory_id, "it changed since"))
            else:
                _require_reviewer_of(actor, memory)
                before[memory.pk] = _values_before(event.changes)
                reasons[memory.pk] = f"undo of {event.action} (history row {event.pk})"
        if before:
            changed = change_memories(
                memory_ids=list(before),
                compute=lambda memory: before[memory.pk],
                action=EventAction.UNDONE,
                actor=actor,
                reason="; ".join(sorted(set(reasons.values()))),
            )
            result.undone = [memory.pk for memory in changed.changed]
    return result


def _values_before(changes: dict[str, Any]) -> dict[str, Any]:
    """The fields of a history row's ``changes`` as they were before it, as model values."""
    values: dict[str, Any] = {}
    for name, (old, _new) in changes.items():
        model_field = Memory._meta.get_field(name)
        if model_field.is_relation and old is not None:
            old = model_field.related_model._default_manager.filter(pk=old).first()  # type: ignore[union-attr]
        elif isinstance(model_field, models.DateTimeField) and isinstance(old, str):
            old = datetime.fromisoformat(old)
        values[name] = old
    return values
