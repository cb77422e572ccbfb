"""Every write to the memory store goes through these functions.

Each change to a memory is made under a row lock (taken in id order, so
concurrent callers never deadlock) and recorded as a MemoryEvent with who, what
(field: [before, after]) and why. Bulk operations are the same code path as
single ones: the admin's bulk approve and the API's approve both end in
``memories_approve``.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from assembly import cache as assembly_cache
from assembly.tokens import count_tokens
from memories.actors import Actor
from memories.keys import API_KEY_TOKEN_PREFIX, hash_secret
from memories.models import (
    DEFAULT_EXPIRY_DAYS,
    ApiKey,
    EventAction,
    Memory,
    MemoryEvent,
    MemoryPolicy,
    MemoryType,
    Outcome,
    Project,
    ReviewStatus,
    Run,
    RunMemory,
    RunStatus,
    Scope,
    Source,
    Tier,
)
from memories.secrets import SecretsPolicy, scrub
from memories.tags import tag_keys, tag_patterns
from memories.text import (
    clean_content,
    clean_tags,
    clean_write_scope,
    content_hash,
    strip_control_characters,
    summarize,
    to_utc,
)
from policies.models import PendingComparison

INITIAL_CONFIDENCE: dict[str, float] = {Source.HUMAN: 1.0, Source.RUN: 0.5, Source.LEARNING: 0.3}
OUTCOME_STEP = 0.1
# Confidence is rounded at every write so that 0.3 - 0.1 is exactly 0.2, not 0.19999999999999998.
CONFIDENCE_DECIMALS = 6
BATCH_SIZE = 500

# Fields kept by the services beside the content and tags; not worth a line of history.
_DERIVED_SILENT = {"tag_patterns", "tag_keys", "content_hash"}


class Conflict(Exception):
    """The request contradicts the stored state (e.g. a run's outcome recorded differently)."""


def clamp_confidence(value: float) -> float:
    return round(min(1.0, max(0.0, value)), CONFIDENCE_DECIMALS)


# --- validation -----------------------------------------------------------------------------


def _choice(value: object, choices: Any, field_name: str) -> str:
    if value not in choices.values:
        allowed = ", ".join(choices.values)
        raise ValidationError({field_name: f"{value!r} is not one of: {allowed}."})
    return str(value)


def _unit_interval(value: object, field_name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError({field_name: "Must be a number from 0 to 1."})
    if not 0.0 <= value <= 1.0:
        raise ValidationError({field_name: f"{value} is outside 0 to 1."})
    # Six decimals are plenty, and a denormal like 5e-324 would underflow in PostgreSQL.
    return round(float(value), CONFIDENCE_DECIMALS)


def _aware_datetime(value: object, field_name: str) -> datetime | None:
    """An expiry: a time-zone-aware date-time, or None for never. A time already past is
    allowed: the memory is expired from the start (kept, never selected)."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise ValidationError({field_name: "Must be a date-time with a time zone."})
    return to_utc(value, field_name)


def _content_fields(content: object, *, summary: object = None) -> dict[str, Any]:
    cleaned = clean_content(content)
    if summary is None or summary == "":
        return {"content": cleaned}
    if not isinstance(summary, str):
        raise ValidationError({"summary": "Summary must be a string."})
    return {"content": cleaned, "summary": clean_content(summary)[:280]}


def _text_fields(mode: str, **given: Any) -> tuple[dict[str, Any], str]:
    """The cleaned, secret-free values of the text fields in ``given`` (content with an
    optional summary, tags) and the fields derived from them; and the history's note of
    what was redacted (``mode`` as memories.secrets.scrub)."""
    fields: dict[str, Any] = {}
    if "content" in given:
        fields |= _content_fields(given["content"], summary=given.get("summary"))
    if "tags" in given:
        fields["tags"] = clean_tags(given["tags"])
    scrubbed = scrub(fields, mode)
    values: dict[str, Any] = dict(scrubbed.values)
    if "content" in values:
        content = values["content"]
        values |= {
            "summary": values.get("summary") or summarize(content),
            "token_count": count_tokens(content),
            "content_hash": content_hash(content),
        }
    if "tags" in values:
        values |= _tag_fields(values["tags"])
    return values, scrubbed.note()


def _tag_fields(tags: list[str]) -> dict[str, Any]:
    """Cleaned tags and the match data derived from them."""
    return {"tags": tags, "tag_patterns": tag_patterns(tags), "tag_keys": tag_keys(tags)}


def _secrets_mode(project: Project | None) -> str:
    """A project's secrets policy; a global memory's secrets are always rejected."""
    return project.policy.secrets if project is not None else SecretsPolicy.REJECT


def default_expiry(
    *, policy: MemoryPolicy | None, memory_type: str, now: datetime
) -> datetime | None:
    """When a new memory of ``memory_type`` expires: the project's policy, else the type default."""
    days = policy.expiry_days(memory_type) if policy else DEFAULT_EXPIRY_DAYS[memory_type]
    return None if days is None else now + timedelta(days=days)


# --- projects -------------------------------------------------------------------------------


@transaction.atomic
def project_create(*, name: str, slug: str, description: str = "", **policy: Any) -> Project:
    project = Project(name=name, slug=slug, description=description)
    project.full_clean()
    project.save()
    memory_policy = MemoryPolicy(project=project, **policy)
    memory_policy.full_clean()
    memory_policy.save()
    return project


# --- memories -------------------------------------------------------------------------------

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
    memory_type = _choice(type, MemoryType, "type")
    memory_source = _choice(source, Source, "source")
    scope = _choice(scope or (Scope.PROJECT if project else Scope.GLOBAL), Scope, "scope")
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
        expires_at = _aware_datetime(expires_at, "expires_at")

    approved = memory_source == Source.HUMAN and actor.can_review() and scope != Scope.GLOBAL
    text, redacted = _text_fields(
        _secrets_mode(project), content=content, summary=summary, tags=tags
    )
    memory = Memory(
        project=project,
        scope=scope,
        type=memory_type,
        source=memory_source,
        source_run=source_run,
        relevance_score=_unit_interval(relevance_score, "relevance_score"),
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
    assembly_cache.invalidate([memory.project_id])
    MemoryEvent.objects.create(
        memory=memory,
        project=project,
        action=EventAction.CREATED,
        changes={
            name: [None, _jsonable(getattr(memory, name))]
            for name in ("type", "content", "tags", "source", "confidence", "expires_at")
        },
        reason=redacted,
        **actor.event_fields(),
        run=source_run,
    )
    return memory


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(value, "pk"):
        return value.pk
    return value


@dataclass
class ChangeResult:
    changed: list[Memory] = field(default_factory=list)
    unchanged_ids: list[int] = field(default_factory=list)
    missing_ids: list[int] = field(default_factory=list)


def _compare_again(diff: dict[str, list[Any]]) -> bool:
    """Whether a change makes a memory one for consolidation to compare again: its words or
    type changed, or it became active again other than back from the archive (a memory
    whose merge a person undid is not merged again unless its words change)."""
    if "content" in diff or "type" in diff:
        return True
    return diff.get("active") == [False, True] and "archived_at" not in diff


def _change_memories(
    *,
    memory_ids: Iterable[int],
    compute: Callable[[Memory], dict[str, Any]],
    action: str,
    actor: Actor,
    reason: str = "",
    run: Run | None = None,
    now: datetime | None = None,
) -> ChangeResult:
    """Lock the memories, compute each one's new values, write the changed ones and their history.

    Queries: one locking read, then per batch of up to BATCH_SIZE changed rows one
    UPDATE and one INSERT of events (and one of pending comparisons when words, type or
    activity changed), whatever the number of memories.
    """
    ids = sorted(set(memory_ids))
    result = ChangeResult()
    if not ids:
        return result
    now = now or timezone.now()
    with transaction.atomic():
        memories = list(
            Memory.objects.select_for_update(of=("self",))
            .filter(id__in=ids)
            .defer("search_vector", "match_keys")
            .order_by("id")
        )
        found = {memory.pk for memory in memories}
        result.missing_ids = [pk for pk in ids if pk not in found]
        events: list[MemoryEvent] = []
        compare: list[PendingComparison] = []
        written: set[str] = set()
        for memory in memories:
            values = compute(memory)
            diff = {
                name: [_jsonable(getattr(memory, name)), _jsonable(value)]
                for name, value in values.items()
                if getattr(memory, name) != value
            }
            if not diff:
                result.unchanged_ids.append(memory.pk)
                continue
            for name, value in values.items():
                setattr(memory, name, value)
            memory.updated_at = now
            written.update(diff)
            result.changed.append(memory)
            if _compare_again(diff):
                compare.append(PendingComparison(memory_id=memory.pk))
            events.append(
                MemoryEvent(
                    memory=memory,
                    project_id=memory.project_id,
                    action=action,
                    changes={k: v for k, v in diff.items() if k not in _DERIVED_SILENT},
                    reason=reason,
                    **actor.event_fields(),
                    run=run,
                )
            )
        if result.changed:
            # Derived fields travel with what they derive from.
            if "content" in written:
                written |= {"summary", "token_count", "content_hash"}
            if "tags" in written:
                written |= {"tag_patterns", "tag_keys"}
            Memory.objects.bulk_update(
                result.changed, sorted(written | {"updated_at"}), batch_size=BATCH_SIZE
            )
            MemoryEvent.objects.bulk_create(events, batch_size=BATCH_SIZE)
            if compare:
                PendingComparison.objects.bulk_create(
                    compare, batch_size=BATCH_SIZE, ignore_conflicts=True
                )
            assembly_cache.invalidate({memory.project_id for memory in result.changed})
    return result


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
    values, redacted = _text_fields(_secrets_mode(memory.project), **text)
    reason = " ".join(part for part in (reason, redacted) if part)
    if "content" in values and values["content"] != memory.content:
        # New words are for compression to judge again.
        values["compressed_at"] = None
    if "relevance_score" in changes:
        values["relevance_score"] = _unit_interval(changes["relevance_score"], "relevance_score")
    if "type" in changes:
        values["type"] = _choice(changes["type"], MemoryType, "type")
    if "expires_at" in changes:
        values["expires_at"] = _aware_datetime(changes["expires_at"], "expires_at")
    result = _change_memories(
        memory_ids=[memory.pk],
        compute=lambda _memory: values,
        action=EventAction.UPDATED,
        actor=actor,
        reason=reason,
        now=now,
    )
    return _one(result, memory)


def _one(result: ChangeResult, memory: Memory) -> Memory:
    if result.missing_ids:
        raise Memory.DoesNotExist(f"memory {memory.pk} no longer exists")
    if result.changed:
        return result.changed[0]
    memory.refresh_from_db()
    return memory


def _require_reviewer(actor: Actor) -> None:
    if not actor.is_human:
        raise PermissionDenied("Approval and rejection are human acts: sign in as a reviewer.")
    if not actor.can_review():
        raise PermissionDenied("You need the reviewer permission to approve or reject memories.")


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
    return _change_memories(
        memory_ids=memory_ids,
        compute=lambda _m: values,
        action=EventAction.APPROVED,
        actor=actor,
        now=now,
    )


def memory_approve(*, memory: Memory, actor: Actor) -> Memory:
    return _one(memories_approve(memory_ids=[memory.pk], actor=actor), memory)


def memories_reject(
    *, memory_ids: Iterable[int], actor: Actor, reason: str = "", now: datetime | None = None
) -> ChangeResult:
    """Human rejection: the memory is set inactive and marked rejected."""
    _require_reviewer(actor)
    return _change_memories(
        memory_ids=memory_ids,
        compute=lambda _m: {
            "review_status": ReviewStatus.REJECTED,
            "active": False,
            "approved_by": None,
            "approved_at": None,
        },
        action=EventAction.REJECTED,
        actor=actor,
        reason=reason,
        now=now,
    )


def memory_reject(*, memory: Memory, actor: Actor, reason: str = "") -> Memory:
    return _one(memories_reject(memory_ids=[memory.pk], actor=actor, reason=reason), memory)


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

    return _change_memories(
        memory_ids=memory_ids,
        compute=compute,
        action=EventAction.ACTIVATED if active else EventAction.DEACTIVATED,
        actor=actor,
        reason=reason,
    )


def memories_set_pinned(*, memory_ids: Iterable[int], pinned: bool, actor: Actor) -> ChangeResult:
    return _change_memories(
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

    return _change_memories(
        memory_ids=memory_ids,
        compute=compute,
        action=EventAction.UPDATED,
        actor=actor,
        reason=f"expiry extended by {days} days",
        now=now,
    )


def memories_clear_expiry(*, memory_ids: Iterable[int], actor: Actor) -> ChangeResult:
    return _change_memories(
        memory_ids=memory_ids,
        compute=lambda _m: {"expires_at": None},
        action=EventAction.UPDATED,
        actor=actor,
        reason="expiry cleared: never expires",
    )


def memories_change_type(*, memory_ids: Iterable[int], type: str, actor: Actor) -> ChangeResult:
    memory_type = _choice(type, MemoryType, "type")
    return _change_memories(
        memory_ids=memory_ids,
        compute=lambda _m: {"type": memory_type},
        action=EventAction.UPDATED,
        actor=actor,
        reason=f"type changed to {memory_type}",
    )


def memories_promote(*, memory_ids: Iterable[int], actor: Actor) -> ChangeResult:
    """A run's scratch memory becomes the project's: the scratch cleanup leaves it alone."""
    return _change_memories(
        memory_ids=memory_ids,
        compute=lambda memory: {"scope": Scope.PROJECT} if memory.scope == Scope.RUN else {},
        action=EventAction.UPDATED,
        actor=actor,
        reason="promoted from the run's scratch to the project",
    )


def _merge_event(survivor_id: int, merged_id: int) -> MemoryEvent | None:
    """The survivor's ``merged`` history row that absorbed ``merged_id``."""
    return (
        MemoryEvent.objects.filter(
            memory_id=survivor_id,
            action=EventAction.MERGED,
            changes__absorbed__1__contains=merged_id,
        )
        .order_by("-created_at", "-id")
        .first()
    )


@transaction.atomic
def memories_restore(
    *, memory_ids: Iterable[int], actor: Actor, now: datetime | None = None
) -> ChangeResult:
    """Archived memories (evicted, merged or cleared run scratch) come back: active, warm,
    without the archive mark. One merged into another also takes back from the survivor what
    the merge gave it: its access count, and the tags that only it brought. Memories that are
    not archived are left as they are."""
    now = now or timezone.now()
    ids = sorted(set(memory_ids))
    merged = list(
        Memory.objects.select_for_update(of=("self",))
        .filter(id__in=ids, merged_into__isnull=False)
        .values_list("id", "merged_into", "access_count", "tags")
        .order_by("id")
    )
    restored = _change_memories(
        memory_ids=ids,
        compute=lambda memory: (
            {"active": True, "tier": Tier.WARM, "archived_at": None, "merged_into": None}
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
        event = _merge_event(survivor_id, memory_id)
        before = set(event.changes["tags"][0]) if event and "tags" in event.changes else set()
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
                **_tag_fields([t for t in survivor.tags if t not in tags or t in keep]),
            }

        _change_memories(
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
    originals: dict[int, str] = {}
    for event in MemoryEvent.objects.filter(
        memory_id__in=ids, action=EventAction.COMPRESSED
    ).order_by("memory_id", "-created_at", "-id"):
        originals.setdefault(event.memory_id, event.changes["content"][0])

    def compute(memory: Memory) -> dict[str, Any]:
        original = originals.get(memory.pk)
        if original is None or original == memory.content:
            return {}
        # Stored once already (secrets were dealt with then); redact anything found anyway.
        values = _text_fields(SecretsPolicy.REDACT, content=original)[0]
        values["summary"] = memory.summary
        return values

    return _change_memories(
        memory_ids=ids,
        compute=compute,
        action=EventAction.RESTORED,
        actor=actor,
        reason="original content restored",
    )


@transaction.atomic
def memories_delete(*, memory_ids: Iterable[int], actor: Actor, reason: str = "") -> int:
    """Delete memories; their history stays, closed by a ``deleted`` event with the last content."""
    memories = list(
        Memory.objects.select_for_update(of=("self",))
        .filter(id__in=sorted(set(memory_ids)))
        .defer("search_vector", "match_keys")
        .order_by("id")
    )
    MemoryEvent.objects.bulk_create(
        [
            MemoryEvent(
                memory_id=memory.pk,
                project_id=memory.project_id,
                action=EventAction.DELETED,
                changes={"content": [memory.content, None], "tags": [memory.tags, None]},
                reason=reason,
                **actor.event_fields(),
            )
            for memory in memories
        ],
        batch_size=BATCH_SIZE,
    )
    Memory.objects.filter(id__in=[memory.pk for memory in memories]).delete()
    assembly_cache.invalidate({memory.project_id for memory in memories})
    return len(memories)


# --- runs -----------------------------------------------------------------------------------


def run_start(
    *,
    project: Project,
    external_id: str,
    actor: Actor,
    task_title: str = "",
    write_scope: Sequence[str] = (),
) -> tuple[Run, bool]:
    """Start a run, or return the one already started with this external id (an agent's retry).

    Returns (run, created). Starting again with another title or write scope is a Conflict.
    """
    if not isinstance(external_id, str):
        raise ValidationError({"external_id": "A run needs an external id."})
    external_id = strip_control_characters(external_id).strip()
    if not external_id:
        raise ValidationError({"external_id": "A run needs an external id."})
    run = Run(
        project=project,
        external_id=external_id,
        task_title=strip_control_characters(task_title).strip(),
        write_scope=clean_write_scope(write_scope),
    )
    run.full_clean(validate_unique=False, validate_constraints=False)
    try:
        with transaction.atomic():
            run.save()
        return run, True
    except IntegrityError:
        existing = Run.objects.get(project=project, external_id=external_id)
    if (existing.task_title, existing.write_scope) != (run.task_title, run.write_scope):
        raise Conflict(
            f"Run {external_id!r} was already started with another title or write scope."
        )
    return existing, False


@transaction.atomic
def run_give_memories(
    *, run: Run, ranked: Sequence[tuple[int, float]], prompt_hash: str = ""
) -> list[RunMemory]:
    """Record which memories (id, score; best first) a run was given, so its outcome moves them."""
    # The lock orders this against a concurrent outcome of the same run.
    status = Run.objects.select_for_update().values_list("status", flat=True).get(pk=run.pk)
    if status != RunStatus.RUNNING:
        raise Conflict(f"Run {run.external_id} has finished; it can be given nothing more.")
    given = [
        RunMemory(run=run, memory_id=memory_id, rank=rank, score=score)
        for rank, (memory_id, score) in enumerate(ranked, start=1)
    ]
    RunMemory.objects.bulk_create(given, ignore_conflicts=True)
    if prompt_hash:
        Run.objects.filter(pk=run.pk).update(prompt_hash=prompt_hash)
        run.prompt_hash = prompt_hash
    return given


@dataclass
class OutcomeResult:
    run: Run
    recorded: bool
    changes: ChangeResult


def run_record_outcome(
    *, run: Run, outcome: str, actor: Actor, now: datetime | None = None
) -> OutcomeResult:
    """Move the confidence of every memory the run was given: +0.1 on success, -0.1 on failure.

    Clamped to [0, 1]; a memory below the project's deactivation threshold (0.2)
    becomes inactive. Recording the same outcome again changes nothing; a
    different outcome for a finished run is a Conflict.
    """
    outcome = _choice(outcome, Outcome, "outcome")
    now = now or timezone.now()
    with transaction.atomic():
        locked = (
            Run.objects.select_for_update(of=("self",))
            .select_related("project__policy")
            .get(pk=run.pk)
        )
        if locked.status != RunStatus.RUNNING:
            if locked.status == outcome:
                return OutcomeResult(run=locked, recorded=False, changes=ChangeResult())
            raise Conflict(
                f"Run {locked.external_id} already finished as {locked.status}; "
                f"it cannot also be {outcome}."
            )
        locked.status = outcome
        locked.finished_at = now
        locked.save(update_fields=["status", "finished_at"])
        delta = OUTCOME_STEP if outcome == RunStatus.SUCCEEDED else -OUTCOME_STEP
        threshold = locked.project.policy.deactivate_below

        def compute(memory: Memory) -> dict[str, Any]:
            confidence = clamp_confidence(memory.confidence + delta)
            values: dict[str, Any] = {"confidence": confidence}
            if confidence < threshold:
                values["active"] = False
            return values

        changes = _change_memories(
            memory_ids=RunMemory.objects.filter(run=locked).values_list("memory_id", flat=True),
            compute=compute,
            action=EventAction.OUTCOME,
            actor=actor,
            reason=f"run {locked.external_id} {outcome}",
            run=locked,
            now=now,
        )
    return OutcomeResult(run=locked, recorded=True, changes=changes)


# --- API keys -------------------------------------------------------------------------------

API_KEY_LAST_USED_RESOLUTION = timedelta(minutes=1)


def api_key_create(*, project: Project, name: str) -> tuple[ApiKey, str]:
    """A new key for ``project``. Returns the key and its token, which is shown only once."""
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": "An API key needs a name."})
    prefix = secrets.token_hex(4)
    secret = secrets.token_urlsafe(32)
    api_key = ApiKey(project=project, name=name, prefix=prefix, secret_hash=hash_secret(secret))
    api_key.full_clean()
    api_key.save()
    return api_key, f"{API_KEY_TOKEN_PREFIX}_{prefix}_{secret}"


def api_key_revoke(*, api_key: ApiKey, now: datetime | None = None) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = now or timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def api_key_touch(*, api_key: ApiKey, now: datetime | None = None) -> None:
    """Record use, at most one write a minute per key (a request never waits on a hot row)."""
    now = now or timezone.now()
    if api_key.last_used_at and now - api_key.last_used_at < API_KEY_LAST_USED_RESOLUTION:
        return
    ApiKey.objects.filter(pk=api_key.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - API_KEY_LAST_USED_RESOLUTION)
    ).update(last_used_at=now)
    api_key.last_used_at = now
