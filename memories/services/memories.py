"""Memories: created, edited, activated, pinned, given an expiry or a type, promoted.

Every change of an existing memory ends in ``change_memories`` (one locked, set-based
primitive); every history row is built by memories.history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memories import history
from memories.actors import Actor
from memories.models import (
    EventAction,
    Memory,
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
    secrets_mode,
    tag_fields,
    text_fields,
    unit_interval,
)
from memories.text import clean_tags

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


def memories_set_pinned(
    *, memory_ids: Iterable[int], pinned: bool, actor: Actor, reason: str = ""
) -> ChangeResult:
    return change_memories(
        memory_ids=memory_ids,
        compute=lambda _m: {"pinned": pinned},
        action=EventAction.PINNED if pinned else EventAction.UNPINNED,
        actor=actor,
        reason=reason,
    )


def _why(what: str, reason: str) -> str:
    return f"{what} ({reason})" if reason else what


def memories_archive(
    *, memory_ids: Iterable[int], actor: Actor, reason: str = "", now: datetime | None = None
) -> ChangeResult:
    """Archived as eviction archives: inactive, frozen, marked with the time; restorable
    (``memories_restore``). Memories already archived are left as they are."""
    now = now or timezone.now()
    return change_memories(
        memory_ids=memory_ids,
        compute=lambda memory: (
            {"active": False, "tier": Tier.FROZEN, "archived_at": now}
            if memory.archived_at is None
            else {}
        ),
        action=EventAction.DEACTIVATED,
        actor=actor,
        reason=_why("archived", reason),
        now=now,
    )


def memories_expire(
    *, memory_ids: Iterable[int], actor: Actor, reason: str = "", now: datetime | None = None
) -> ChangeResult:
    """Expired now, as the expiry job expires them: inactive, their expiry set to now
    unless it already passed."""
    now = now or timezone.now()

    def compute(memory: Memory) -> dict[str, Any]:
        if memory.expires_at is not None and memory.expires_at <= now:
            return {"active": False}
        return {"active": False, "expires_at": now}

    return change_memories(
        memory_ids=memory_ids,
        compute=compute,
        action=EventAction.EXPIRED,
        actor=actor,
        reason=reason,
        now=now,
    )


def memories_retag(
    *,
    memory_ids: Iterable[int],
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
    actor: Actor,
    reason: str = "",
) -> ChangeResult:
    """Tags added (at the end, once) and removed. The tags added are cleaned and scanned
    for secrets as a global memory's are (a secret is refused): they go to many projects."""
    added = text_fields(SecretsPolicy.REJECT, tags=list(add))[0]["tags"] if add else []
    removed = {str(tag).strip() for tag in remove}

    def compute(memory: Memory) -> dict[str, Any]:
        kept = [tag for tag in memory.tags if tag not in removed]
        tags = kept + [tag for tag in added if tag not in kept]
        if tags == list(memory.tags):
            return {}
        return tag_fields(clean_tags(tags))

    return change_memories(
        memory_ids=memory_ids,
        compute=compute,
        action=EventAction.UPDATED,
        actor=actor,
        reason=_why("tags changed", reason),
    )


# The tiers a person may choose; frozen is what archiving makes.
CHOSEN_TIERS = (Tier.HOT, Tier.WARM, Tier.COLD)


def memories_set_tier(
    *, memory_ids: Iterable[int], tier: str, actor: Actor, reason: str = ""
) -> ChangeResult:
    """A storage tier chosen by a person (hot, warm or cold); archived memories stay frozen
    (restore them first). The tiers job sets it again by use later on."""
    if tier not in CHOSEN_TIERS:
        raise ValidationError({"tier": "Choose hot, warm or cold (archiving freezes)."})
    chosen = Tier(tier)
    return change_memories(
        memory_ids=memory_ids,
        compute=lambda memory: {"tier": chosen} if memory.archived_at is None else {},
        action=EventAction.UPDATED,
        actor=actor,
        reason=_why(f"tier changed to {chosen}", reason),
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
