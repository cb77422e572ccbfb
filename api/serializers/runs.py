"""Runs: starting one, what it was given, and the outcome reported for it."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.fields import StrictCharField, StrictChoiceField, StrictInput, StrictIntegerField
from memories.models import Outcome, Run, RunStatus
from memories.text import WRITE_SCOPE_ENTRY_MAX_CHARS, WRITE_SCOPE_MAX_ENTRIES


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
