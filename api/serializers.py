"""Request and response shapes of the API, in camelCase.

Responses on hot paths are built by plain functions (``memory_out`` ...); the
``*Out`` serializers describe them for the OpenAPI schema, and a test keeps the
two in step.
"""

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
    tag_list,
)
from knowledge.models import MemoryPair, PairKind, PairStatus
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
    superseded memories to the live end of their chain (memories.decisions.live_successors)."""
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


@extend_schema_serializer(component_name="Conflict")
class ConflictOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(
        choices=PairKind.choices,
        help_text="`repeat`: they say the same; `conflict`: same subject, different claim.",
    )
    memoryIds = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2)
    status = serializers.ChoiceField(
        choices=PairStatus.choices,
        help_text="`open` until decided; `dismissed`: judged no conflict (until either's words"
        " change).",
    )
    similarity = serializers.FloatField()
    evidence = serializers.DictField(
        help_text="Why: `similarity`, `signals` (number, negation, opposite, change, name),"
        " `differs` (what differs), the words only one side has; `supersede` for an agent's"
        " supersede waiting for a reviewer."
    )
    resolution = serializers.CharField(
        help_text="kept, merged, not_conflict, rejected or changed; empty while open."
    )
    outcomeMemoryId = serializers.IntegerField(
        allow_null=True, help_text="The memory kept, made by a merge, or rejected."
    )
    resolvedBy = serializers.CharField()
    resolvedAt = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    createdAt = serializers.DateTimeField()


def conflict_out(pair: MemoryPair) -> dict[str, Any]:
    return {
        "id": pair.pk,
        "kind": pair.kind,
        "memoryIds": pair.memory_ids,
        "status": pair.status,
        "similarity": pair.similarity,
        "evidence": pair.evidence,
        "resolution": pair.resolution,
        "outcomeMemoryId": pair.outcome_memory_id,
        "resolvedBy": pair.resolved_actor,
        "resolvedAt": pair.resolved_at,
        "reason": pair.reason,
        "createdAt": pair.created_at,
    }


class ConflictPageOut(serializers.Serializer):
    conflicts = ConflictOut(many=True)
    next = serializers.URLField(allow_null=True)


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


class SupersedeIn(StrictInput):
    by = StrictIntegerField(min_value=1, help_text="The memory that replaces this one.")
    reason = StrictCharField(max_length=500, required=False, default="", allow_blank=True)


class SupersedeWaitingOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["waiting"])
    message = serializers.CharField()
    conflict = ConflictOut()


class ResolveIn(StrictInput):
    action = StrictChoiceField(
        choices=[
            ("keep", "keep memoryId, supersede the other"),
            ("merge", "one new memory says it once; both superseded by it"),
            ("dismiss", "not a conflict: keep both"),
            ("reject", "reject memoryId (reviewers)"),
        ]
    )
    memoryId = StrictIntegerField(
        required=False, allow_null=True, default=None, help_text="For keep and reject."
    )
    content = _content_field(
        required=False, help_text="For merge: the merged text (default: the one with precedence)."
    )
    type = StrictChoiceField(choices=MemoryType.choices, required=False)
    tags = tag_list(required=False)
    reason = StrictCharField(max_length=500, required=False, default="", allow_blank=True)


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


class FlagIn(StrictInput):
    reason = StrictCharField(
        max_length=1000,
        visible=True,
        help_text="What looks wrong or stale, for the reviewer (e.g. 'the port is 5433 now').",
    )


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
        help_text=(
            "Paths and globs the run will write (see docs/retrieval.md, How tags match a"
            " write scope)."
        ),
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
    usedMemoryIds = serializers.ListField(
        child=serializers.IntegerField(),
        allow_null=True,
        help_text="The memories its outcome said the agent used (null: it said nothing).",
    )


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
        "usedMemoryIds": run.used_memory_ids,
    }


class GivenOut(serializers.Serializer):
    memoryId = serializers.IntegerField()
    rank = serializers.IntegerField()
    score = serializers.FloatField()
    scoreParts = serializers.DictField(
        child=serializers.FloatField(), help_text="The parts of its score when it was given."
    )
    used = serializers.BooleanField(
        allow_null=True, help_text="Whether the agent used it (null: its outcome said nothing)."
    )


@extend_schema_serializer(component_name="RunDetail")
class RunDetailOut(RunOut):
    given = GivenOut(many=True, help_text="The memories the run was given, best first.")


class OutcomeIn(StrictInput):
    outcome = StrictChoiceField(choices=Outcome.choices)
    usedMemoryIds = serializers.ListField(
        child=StrictIntegerField(min_value=1),
        max_length=1000,
        required=False,
        help_text="The memories the agent actually used (of this project, or global ones): "
        "the project's ranking learns from them (its weights are fitted to rank such memories "
        "first, and changed only when that ranks held-back runs better).",
    )


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
    paused = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Ids of given memories flagged for re-review (by an agent or a code change): "
        "they gain nothing from a success until a reviewer approves them (a failure still "
        "lowers them).",
    )


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
