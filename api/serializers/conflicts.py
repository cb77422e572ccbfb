"""Pairs of memories that repeat or may contradict each other, and the decisions on them
(including an agent's supersede that waits for a reviewer).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from api.fields import (
    StrictCharField,
    StrictChoiceField,
    StrictInput,
    StrictIntegerField,
    content_field,
    tag_list,
)
from knowledge.models import MemoryPair, PairKind, PairStatus
from memories.models import MemoryType


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
        help_text="Why: `similarity`, `class` (quantity, version, schedule, polarity,"
        " exclusivity, naming, choice; reworded or paraphrase for a repeat),"
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
    content = content_field(
        required=False, help_text="For merge: the merged text (default: the one with precedence)."
    )
    type = StrictChoiceField(choices=MemoryType.choices, required=False)
    tags = tag_list(required=False)
    reason = StrictCharField(max_length=500, required=False, default="", allow_blank=True)
