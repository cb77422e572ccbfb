"""Users' preferences: one set, their list, their history, and those for every project."""

from __future__ import annotations

import re
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from api.fields import StrictCharField, StrictInput
from api.serializers.conversations import id_field
from people.models import (
    CATEGORY_MAX,
    KEY_MAX,
    USER_REF_MAX,
    Preference,
    PreferenceEvent,
    PreferenceStatus,
)
from people.preferences import NAME_PATTERN


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "array", "items": {}},
            {"type": "object", "additionalProperties": {}},
        ]
    }
)
class AnyJSONField(serializers.JSONField):
    """Any JSON value but null, taken as it was sent (the parser already decoded it)."""

    def to_internal_value(self, data: Any) -> Any:
        if data is None:
            raise serializers.ValidationError("A value is required (any JSON but null).")
        return data


NAME_RULE = "Letters, digits and _ . : - only, starting with a letter or a digit."


class NameField(StrictCharField):
    """A key or a category as it was sent: checked before anything is stripped from it."""

    default_error_messages = {"name": NAME_RULE}

    def __init__(self, **kwargs: Any) -> None:
        # (a blank category is taken before validators run: its pattern must not take ""
        # too, or the schema offers "" twice and ``oneOf`` refuses it)
        kwargs.setdefault("validators", []).append(RegexValidator(NAME_PATTERN, message=NAME_RULE))
        super().__init__(trim_whitespace=False, **kwargs)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if isinstance(data, str) and data and not re.fullmatch(NAME_PATTERN, data):
            self.fail("name")
        return super().run_validation(data)


class PreferenceIn(StrictInput):
    value = AnyJSONField(help_text="Any JSON: a string, number, boolean, list or object.")
    category = NameField(
        max_length=CATEGORY_MAX,
        required=False,
        allow_null=True,
        allow_blank=True,
        help_text="Groups preferences (e.g. style, language); left out: kept as it was.",
    )


class GlobalPreferenceIn(PreferenceIn):
    userId = id_field(USER_REF_MAX, "The user, as the calling system names them.")
    key = NameField(max_length=KEY_MAX)


@extend_schema_serializer(component_name="Preference")
class PreferenceOut(serializers.Serializer):
    id = serializers.IntegerField()
    userId = serializers.CharField()
    key = serializers.CharField()
    value = serializers.JSONField()
    category = serializers.CharField()
    scope = serializers.ChoiceField(
        choices=["project", "global"],
        help_text="project: set in this project; global: approved for every project.",
    )
    status = serializers.ChoiceField(choices=PreferenceStatus.choices)
    updatedBy = serializers.CharField()
    updatedAt = serializers.DateTimeField()


def preference_out(preference: Preference) -> dict[str, Any]:
    return {
        "id": preference.pk,
        "userId": preference.user_ref,
        "key": preference.key,
        "value": preference.value,
        "category": preference.category,
        "scope": "global" if preference.project_id is None else "project",
        "status": preference.status,
        "updatedBy": preference.updated_by,
        "updatedAt": preference.updated_at,
    }


class PreferenceListOut(serializers.Serializer):
    userId = serializers.CharField()
    preferences = PreferenceOut(many=True)


@extend_schema_serializer(component_name="PreferenceEvent")
class PreferenceEventOut(serializers.Serializer):
    key = serializers.CharField()
    action = serializers.CharField()
    changes = serializers.JSONField()
    actor = serializers.CharField()
    at = serializers.DateTimeField()


def event_out(event: PreferenceEvent) -> dict[str, Any]:
    return {
        "key": event.key,
        "action": event.action,
        "changes": event.changes,
        "actor": event.actor_label,
        "at": event.created_at,
    }


class ErasedOut(serializers.Serializer):
    userId = serializers.CharField()
    preferences = serializers.IntegerField()
    conversations = serializers.IntegerField()
    messages = serializers.IntegerField()
