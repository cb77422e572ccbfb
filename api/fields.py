"""Strict input: the JSON type a field asks for, or a 400 that says so; no unknown fields."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.utils.dateparse import parse_datetime
from rest_framework import serializers

from memories.text import strip_control_characters, to_utc


class StrictInput(serializers.Serializer):
    """A request body serializer that refuses anything but a JSON object of known fields."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {"nonFieldErrors": ["Send a JSON object with the fields of this operation."]}
            )
        allowed = sorted(name for name, field in self.fields.items() if not field.read_only)
        errors = {
            name: [f"Unknown field. Allowed: {', '.join(allowed)}."]
            for name in sorted(set(data) - set(allowed))
        }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as invalid:
            detail = invalid.detail if isinstance(invalid.detail, dict) else {}
            raise serializers.ValidationError({**errors, **detail} or invalid.detail) from None
        if errors:
            raise serializers.ValidationError(errors)
        return value


# Contains at least one visible character (unanchored, as JSON Schema patterns are).
VISIBLE = r"[^\s\x00-\x1f\x7f-\x9f]"


class StrictCharField(serializers.CharField):
    """A JSON string with control characters stripped (the product's rule for all text), so
    nothing PostgreSQL cannot store (NUL) reaches it. ``visible=True``: must have a visible
    character, stated in the schema as a pattern."""

    default_error_messages = {
        "invalid": "Must be a JSON string.",
        "not_visible": "Must contain a visible character.",
    }

    def __init__(self, *, visible: bool = False, **kwargs: Any) -> None:
        if visible:
            kwargs.setdefault("validators", []).append(
                RegexValidator(VISIBLE, message=self.default_error_messages["not_visible"])
            )
        super().__init__(**kwargs)

    def run_validation(self, data: Any = serializers.empty) -> Any:
        if isinstance(data, str):
            if self.max_length is not None and len(data) > self.max_length:
                self.fail("max_length", max_length=self.max_length)  # the limit is on what was sent
            # Stripped before the validators run, so NUL is removed rather than refused.
            data = strip_control_characters(data)
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictChoiceField(serializers.ChoiceField):
    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)

    default_error_messages = {
        "invalid_choice": "{input!r} is not one of the allowed values.",
    }


class StrictFloatField(serializers.FloatField):
    default_error_messages = {"invalid": "Must be a JSON number."}

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        if isinstance(data, float) and not math.isfinite(data):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "Must be a JSON integer."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", 2**63 - 1)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """true or false, as JSON says them (never "yes", 1 or "false")."""

    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictDateTimeField(serializers.DateTimeField):
    default_error_messages = {
        "invalid": "Must be an ISO 8601 date-time with a time zone, e.g. 2030-01-31T12:00:00Z.",
    }

    def to_internal_value(self, value: Any) -> datetime:
        try:
            given = parse_datetime(value) if isinstance(value, str) else None
            if given is not None and given.tzinfo is not None:
                return to_utc(given, self.field_name)
        except (ValueError, DjangoValidationError):
            pass
        raise serializers.ValidationError(self.error_messages["invalid"], code="invalid")


def content_field(**kwargs: Any) -> StrictCharField:
    """A memory's text: up to MEMORY_CONTENT_MAX_CHARS, its whitespace kept."""
    return StrictCharField(
        max_length=settings.MEMORY_CONTENT_MAX_CHARS, trim_whitespace=False, visible=True, **kwargs
    )


def tag_list(**kwargs: Any) -> serializers.ListField:
    from django.conf import settings

    return serializers.ListField(
        child=StrictCharField(max_length=settings.MEMORY_TAG_MAX_CHARS, visible=True),
        max_length=settings.MEMORY_MAX_TAGS,
        **kwargs,
    )
