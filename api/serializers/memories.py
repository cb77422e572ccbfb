"""Memories in and out (project and global), what a write superseded, and a memory's history."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.fields import (
    StrictCharField,
    StrictChoiceField,
    StrictDateTimeField,
    StrictFloatField,
    StrictInput,
    StrictIntegerField,
    content_field,
    tag_list,
)
from api.serializers.conflicts import ConflictOut
from memories.models import (
    EventAction,
    Memory,
    MemoryEvent,
    MemoryType,
    ReviewStatus,
    Scope,
    Source,
    Tier,
)


@extend_schema_serializer(component_name="Memory")
class MemoryOut(serializers.Serializer):
    id = serializers.IntegerField()
    projectId = serializers.IntegerField(allow_null=True)
    scope = serializers.ChoiceField(choices=Scope.choices)
    type = serializers.ChoiceField(choices=MemoryType.choices)
    content = serializers.CharField()
    summary = serializers.CharField()
    source = serializers.ChoiceField(choices=Source.choices)
    sourceRunId = serializers.IntegerField(allow_null=True)
    tags = serializers.ListField(child=serializers.CharField())
    relevanceScore = serializers.FloatField()
    confidence = serializers.FloatField()
    active = serializers.BooleanField()
    expiresAt = serializers.DateTimeField(allow_null=True)
    reviewStatus = serializers.ChoiceField(choices=ReviewStatus.choices)
    approvedBy = serializers.CharField(allow_null=True)
    approvedAt = serializers.DateTimeField(allow_null=True)
    pinned = serializers.BooleanField()
    tier = serializers.ChoiceField(choices=Tier.choices)
    tokenCount = serializers.IntegerField()
    accessCount = serializers.IntegerField()
    lastAccessedAt = serializers.DateTimeField(allow_null=True)
    archivedAt = serializers.DateTimeField(
        allow_null=True, help_text="When it was evicted, merged or cleared (restorable)."
    )
    mergedInto = serializers.IntegerField(
        allow_null=True, help_text="The memory a consolidation merged this one into."
    )
    compressedAt = serializers.DateTimeField(allow_null=True)
    supersededBy = serializers.IntegerField(
        allow_null=True, help_text="The memory that replaced this one (archived, restorable)."
    )
    supersededAt = serializers.DateTimeField(allow_null=True)
    supersededActor = serializers.CharField(
        help_text="Who superseded it: `user:<name>` or `api-key:<name>`."
    )
    liveSuccessor = serializers.IntegerField(
        allow_null=True,
        help_text="The live end of its chain of supersedes (A by B, B by C: C).",
    )
    staleAt = serializers.DateTimeField(
        allow_null=True, help_text="When a code change flagged it for re-review."
    )
    staleRef = serializers.CharField(help_text="The commit or merge that flagged it.")
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


def memory_out(memory: Memory, live: Mapping[int, int] | None = None) -> dict[str, Any]:
    """A memory as the API shows it (needs ``approved_by`` selected with it); ``live`` maps
    superseded memories to the live end of their chain (knowledge.supersedes.live_successors)."""
    successor = memory.superseded_by_id
    return {
        "id": memory.pk,
        "projectId": memory.project_id,
        "scope": memory.scope,
        "type": memory.type,
        "content": memory.content,
        "summary": memory.summary,
        "source": memory.source,
        "sourceRunId": memory.source_run_id,
        "tags": memory.tags,
        "relevanceScore": memory.relevance_score,
        "confidence": memory.confidence,
        "active": memory.active,
        "expiresAt": memory.expires_at,
        "reviewStatus": memory.review_status,
        "approvedBy": memory.approved_by.get_username() if memory.approved_by else None,
        "approvedAt": memory.approved_at,
        "pinned": memory.pinned,
        "tier": memory.tier,
        "tokenCount": memory.token_count,
        "accessCount": memory.access_count,
        "lastAccessedAt": memory.last_accessed_at,
        "archivedAt": memory.archived_at,
        "mergedInto": memory.merged_into_id,
        "compressedAt": memory.compressed_at,
        "supersededBy": successor,
        "supersededAt": memory.superseded_at,
        "supersededActor": memory.superseded_actor,
        "liveSuccessor": (live or {}).get(memory.pk, successor) if successor else None,
        "staleAt": memory.stale_at,
        "staleRef": memory.stale_ref,
        "createdAt": memory.created_at,
        "updatedAt": memory.updated_at,
    }


class MemoryPageOut(serializers.Serializer):
    memories = MemoryOut(many=True)
    next = serializers.URLField(allow_null=True, help_text="URL of the next page, or null.")


class MemoryCreateIn(StrictInput):
    type = StrictChoiceField(choices=MemoryType.choices)
    content = content_field()
    tags = tag_list(required=False, default=list)
    relevanceScore = StrictFloatField(min_value=0.0, max_value=1.0, required=False, default=0.5)
    source = StrictChoiceField(choices=Source.choices, required=False, default=Source.RUN)
    sourceRunId = StrictIntegerField(required=False, allow_null=True, default=None)
    expiresAt = StrictDateTimeField(
        required=False, allow_null=True, help_text="Omit for the type's default; null: never."
    )
    summary = StrictCharField(
        max_length=settings.MEMORY_SUMMARY_MAX_CHARS, required=False, visible=True
    )
    scope = StrictChoiceField(
        choices=[(Scope.PROJECT, "project"), (Scope.RUN, "run")],
        required=False,
        default=Scope.PROJECT,
        help_text="`run`: scratch notes of the run `sourceRunId`, cleared when it ends.",
    )
    supersedes = serializers.ListField(
        child=StrictIntegerField(min_value=1),
        required=False,
        default=list,
        max_length=20,
        help_text="Ids of memories this one replaces: each is superseded by it (archived,"
        " restorable), or, for an approved or global memory written over by an agent, a"
        " conflict waits for a reviewer.",
    )


class GlobalMemoryCreateIn(StrictInput):
    type = StrictChoiceField(choices=MemoryType.choices)
    content = content_field()
    tags = tag_list(required=False, default=list)
    relevanceScore = StrictFloatField(min_value=0.0, max_value=1.0, required=False, default=0.5)
    source = StrictChoiceField(choices=Source.choices, required=False, default=Source.RUN)
    summary = StrictCharField(
        max_length=settings.MEMORY_SUMMARY_MAX_CHARS, required=False, visible=True
    )


class MemoryUpdateIn(StrictInput):
    type = StrictChoiceField(choices=MemoryType.choices, required=False)
    content = content_field(required=False)
    summary = StrictCharField(
        max_length=settings.MEMORY_SUMMARY_MAX_CHARS, required=False, visible=True
    )
    tags = tag_list(required=False)
    relevanceScore = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    expiresAt = StrictDateTimeField(required=False, allow_null=True)
    reason = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text="Why, for the history."
    )


class SupersededOut(serializers.Serializer):
    done = serializers.ListField(
        child=serializers.IntegerField(), help_text="Memories superseded now."
    )
    waiting = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Conflicts opened for a reviewer (approved or global memories).",
    )


@extend_schema_serializer(component_name="CreatedMemory")
class MemoryCreatedOut(MemoryOut):
    superseded = SupersededOut(help_text="What `supersedes` did.")
    conflicts = ConflictOut(
        many=True, help_text="Open pairs found when it was written: repeats, possible conflicts."
    )


class FlagIn(StrictInput):
    reason = StrictCharField(
        max_length=1000,
        visible=True,
        help_text="What looks wrong or stale, for the reviewer (e.g. 'the port is 5433 now').",
    )


class RejectIn(StrictInput):
    reason = StrictCharField(max_length=500, required=False, default="", allow_blank=True)


@extend_schema_serializer(component_name="Actor")
class ActorOut(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["user", "apiKey", "system"])
    name = serializers.CharField()


@extend_schema_serializer(component_name="Event")
class EventOut(serializers.Serializer):
    id = serializers.IntegerField()
    memoryId = serializers.IntegerField()
    action = serializers.ChoiceField(choices=EventAction.choices)
    changes = serializers.DictField(
        child=serializers.ListField(min_length=2, max_length=2, allow_null=True),
        help_text="field: [before, after]",
    )
    reason = serializers.CharField()
    actor = ActorOut()
    runId = serializers.IntegerField(allow_null=True)
    createdAt = serializers.DateTimeField()


def event_out(event: MemoryEvent) -> dict[str, Any]:
    if event.actor_user_id:
        kind = "user"
    elif event.actor_api_key_id:
        kind = "apiKey"
    else:
        kind = "system"
    return {
        "id": event.pk,
        "memoryId": event.memory_id,
        "action": event.action,
        "changes": event.changes,
        "reason": event.reason,
        "actor": {"kind": kind, "name": event.actor_label.split(":", 1)[-1]},
        "runId": event.run_id,
        "createdAt": event.created_at,
    }


class EventPageOut(serializers.Serializer):
    events = EventOut(many=True)
    next = serializers.URLField(allow_null=True)
