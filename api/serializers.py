"""Request and response shapes of the API, in camelCase.

Responses on hot paths are built by plain functions (``memory_out`` ...); the
``*Out`` serializers describe them for the OpenAPI schema, and a test keeps the
two in step.
"""

from __future__ import annotations

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
    tag_list,
)
from memories.models import (
    EventAction,
    Memory,
    MemoryEvent,
    MemoryType,
    Outcome,
    Project,
    ReviewStatus,
    Run,
    RunStatus,
    Scope,
    Source,
    Tier,
)
from memories.secrets import SecretsPolicy
from memories.text import WRITE_SCOPE_ENTRY_MAX_CHARS, WRITE_SCOPE_MAX_ENTRIES

# --- errors ---------------------------------------------------------------------------------


class ErrorDetail(serializers.Serializer):
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `invalid`.")
    message = serializers.CharField(help_text="What went wrong and what to fix.")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Messages per input field (camelCase), when fields are at fault.",
    )


@extend_schema_serializer(component_name="Error")
class ErrorOut(serializers.Serializer):
    error = ErrorDetail()


# --- memories -------------------------------------------------------------------------------


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
    staleAt = serializers.DateTimeField(
        allow_null=True, help_text="When a code change flagged it for re-review."
    )
    staleRef = serializers.CharField(help_text="The commit or merge that flagged it.")
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField()


def memory_out(memory: Memory) -> dict[str, Any]:
    """A memory as the API shows it (needs ``approved_by`` selected with it)."""
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
        "staleAt": memory.stale_at,
        "staleRef": memory.stale_ref,
        "createdAt": memory.created_at,
        "updatedAt": memory.updated_at,
    }


class MemoryPageOut(serializers.Serializer):
    memories = MemoryOut(many=True)
    next = serializers.URLField(allow_null=True, help_text="URL of the next page, or null.")


def _content_field(**kwargs: Any) -> StrictCharField:
    return StrictCharField(
        max_length=settings.MEMORY_CONTENT_MAX_CHARS, trim_whitespace=False, visible=True, **kwargs
    )


class MemoryCreateIn(StrictInput):
    type = StrictChoiceField(choices=MemoryType.choices)
    content = _content_field()
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


class GlobalMemoryCreateIn(StrictInput):
    type = StrictChoiceField(choices=MemoryType.choices)
    content = _content_field()
    tags = tag_list(required=False, default=list)
    relevanceScore = StrictFloatField(min_value=0.0, max_value=1.0, required=False, default=0.5)
    source = StrictChoiceField(choices=Source.choices, required=False, default=Source.RUN)
    summary = StrictCharField(
        max_length=settings.MEMORY_SUMMARY_MAX_CHARS, required=False, visible=True
    )


class MemoryUpdateIn(StrictInput):
    type = StrictChoiceField(choices=MemoryType.choices, required=False)
    content = _content_field(required=False)
    summary = StrictCharField(
        max_length=settings.MEMORY_SUMMARY_MAX_CHARS, required=False, visible=True
    )
    tags = tag_list(required=False)
    relevanceScore = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    expiresAt = StrictDateTimeField(required=False, allow_null=True)
    reason = StrictCharField(
        max_length=500, required=False, allow_blank=True, help_text="Why, for the history."
    )


class ChangesIn(StrictInput):
    paths = serializers.ListField(
        child=StrictCharField(max_length=500, visible=True),
        min_length=1,
        max_length=500,
        help_text=(
            "The paths the commit or merge changed, up to 500 per request: send more in"
            " several requests with the same ref (a memory is flagged once per ref)."
        ),
    )
    ref = StrictCharField(max_length=200, visible=True, help_text="The commit or merge.")


class ChangesOut(serializers.Serializer):
    ref = serializers.CharField()
    marked = serializers.IntegerField(help_text="Memories flagged stale by this change.")
    memoryIds = serializers.ListField(child=serializers.IntegerField())


class RejectIn(StrictInput):
    reason = StrictCharField(max_length=500, required=False, default="", allow_blank=True)


# --- history --------------------------------------------------------------------------------


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


# --- runs -----------------------------------------------------------------------------------


class RunCreateIn(StrictInput):
    externalId = StrictCharField(
        max_length=200, visible=True, help_text="The orchestrator's id of the run."
    )
    taskTitle = StrictCharField(max_length=500, required=False, default="", allow_blank=True)
    writeScope = serializers.ListField(
        child=StrictCharField(max_length=WRITE_SCOPE_ENTRY_MAX_CHARS, visible=True),
        max_length=WRITE_SCOPE_MAX_ENTRIES,
        required=False,
        default=list,
        help_text="Paths and globs the run will write (see the README on tag matching).",
    )


@extend_schema_serializer(component_name="Run")
class RunOut(serializers.Serializer):
    id = serializers.IntegerField()
    projectId = serializers.IntegerField()
    externalId = serializers.CharField()
    taskTitle = serializers.CharField()
    writeScope = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=RunStatus.choices)
    promptHash = serializers.CharField()
    startedAt = serializers.DateTimeField()
    finishedAt = serializers.DateTimeField(allow_null=True)


def run_out(run: Run) -> dict[str, Any]:
    return {
        "id": run.pk,
        "projectId": run.project_id,
        "externalId": run.external_id,
        "taskTitle": run.task_title,
        "writeScope": run.write_scope,
        "status": run.status,
        "promptHash": run.prompt_hash,
        "startedAt": run.started_at,
        "finishedAt": run.finished_at,
    }


class GivenOut(serializers.Serializer):
    memoryId = serializers.IntegerField()
    rank = serializers.IntegerField()
    score = serializers.FloatField()


@extend_schema_serializer(component_name="RunDetail")
class RunDetailOut(RunOut):
    given = GivenOut(many=True, help_text="The memories the run was given, best first.")


class OutcomeIn(StrictInput):
    outcome = StrictChoiceField(choices=Outcome.choices)


@extend_schema_serializer(component_name="MovedMemory")
class MovedMemoryOut(serializers.Serializer):
    id = serializers.IntegerField()
    confidence = serializers.FloatField()
    active = serializers.BooleanField()


@extend_schema_serializer(component_name="OutcomeResult")
class OutcomeOut(serializers.Serializer):
    run = RunOut()
    recorded = serializers.BooleanField(
        help_text="false when this outcome had already been recorded: nothing changed."
    )
    memories = MovedMemoryOut(many=True, help_text="The memories whose confidence moved.")


# --- projects -------------------------------------------------------------------------------


@extend_schema_serializer(component_name="Policy")
class PolicyOut(serializers.Serializer):
    expiryDays = serializers.DictField(child=serializers.IntegerField(allow_null=True))
    selectionLimit = serializers.IntegerField()
    minConfidence = serializers.FloatField()
    deactivateBelow = serializers.FloatField()
    maxItems = serializers.IntegerField(allow_null=True)
    secrets = serializers.ChoiceField(
        choices=SecretsPolicy.CHOICES,
        help_text="A write holding a secret is rejected (400 naming where) or stored with the "
        "secret replaced by [REDACTED <kind>].",
    )


@extend_schema_serializer(component_name="Project")
class ProjectOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    slug = serializers.CharField()
    description = serializers.CharField()
    createdAt = serializers.DateTimeField()
    policy = PolicyOut()


def project_out(project: Project) -> dict[str, Any]:
    policy = project.policy
    return {
        "id": project.pk,
        "name": project.name,
        "slug": project.slug,
        "description": project.description,
        "createdAt": project.created_at,
        "policy": {
            "expiryDays": {kind: policy.expiry_days(kind) for kind in MemoryType.values},
            "selectionLimit": policy.selection_limit,
            "minConfidence": policy.min_confidence,
            "deactivateBelow": policy.deactivate_below,
            "maxItems": policy.max_items,
            "secrets": policy.secrets,
        },
    }


@extend_schema_serializer(component_name="ProjectList")
class ProjectListOut(serializers.Serializer):
    projects = ProjectOut(many=True)
