"""Query parameters of the memory lists."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import django_filters
import django_filters.fields
from django import forms
from django.contrib.postgres.search import SearchQuery
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework.exceptions import ValidationError
from rest_framework.filters import OrderingFilter

from knowledge.models import EntityMention
from memories.models import Memory, MemoryType, ReviewStatus, Source
from memories.text import to_utc


class AwareIsoDateTimeField(django_filters.fields.IsoDateTimeField):
    """An ISO 8601 date-time that names its offset: a naive one is refused, not read in the
    server's time zone (as the API's bodies refuse it)."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str):
            try:
                parsed = parse_datetime(value.strip())
            except ValueError:
                parsed = None  # the parent says what is wrong with it
            if parsed is not None and timezone.is_naive(parsed):
                raise forms.ValidationError(
                    "Must be a date-time with a time zone, e.g. 2030-01-01T00:00:00Z.",
                    code="naive",
                )
        return super().to_python(value)


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    """An ISO 8601 date-time with an offset, normalised to UTC before it reaches the database."""

    field_class = AwareIsoDateTimeField

    def filter(self, qs: QuerySet[Memory], value: datetime | None) -> QuerySet[Memory]:
        if value is None:
            return qs
        try:
            return super().filter(qs, to_utc(value, self.field_name))
        except DjangoValidationError as error:
            raise ValidationError({"expiringBefore": error.messages}) from None


@extend_schema_field(OpenApiTypes.BOOL)
class StrictBooleanFilter(django_filters.TypedChoiceFilter):
    """``true`` or ``false``; anything else is a 400 (django-filter's own boolean ignores it)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            choices=[("true", "true"), ("false", "false")],
            coerce=lambda value: value == "true",
            **kwargs,
        )


class MemoryFilter(django_filters.FilterSet):
    type = django_filters.ChoiceFilter(choices=MemoryType.choices)
    active = StrictBooleanFilter(
        help_text="Default true: only active memories. `false` for inactive ones."
    )
    tags = django_filters.CharFilter(
        method="filter_tags", help_text="Comma-separated; memories with any of these tags."
    )
    source = django_filters.ChoiceFilter(choices=Source.choices)
    reviewStatus = django_filters.ChoiceFilter(
        field_name="review_status", choices=ReviewStatus.choices
    )
    q = django_filters.CharFilter(
        method="filter_text", help_text="Full-text search of the content (web-search syntax)."
    )
    about = django_filters.CharFilter(
        method="filter_about",
        max_length=200,
        help_text="Memories that mention this name: an entity the knowledge layer read in"
        " them (a class, function, file, module or package, e.g. RetryQueue), or these words"
        " in this order.",
    )
    expiringBefore = UtcDateTimeFilter(
        field_name="expires_at", lookup_expr="lt", help_text="Memories expiring before this time."
    )

    class Meta:
        model = Memory
        fields: list[str] = []

    def __init__(self, data: Any = None, *args: Any, **kwargs: Any) -> None:
        if data is not None and "active" not in data:
            data = data.copy()
            data["active"] = "true"
        super().__init__(data, *args, **kwargs)

    # Parameters whose empty value is a mistake, not "no filter".
    NOT_EMPTY = ("type", "active", "source", "reviewStatus", "expiringBefore")

    def is_valid(self) -> bool:
        valid = super().is_valid()
        for name in self.NOT_EMPTY:
            if name in self.data and self.data[name] == "":
                self.form.add_error(name, "Give a value, or leave the parameter out.")
                valid = False
        return valid

    def filter_tags(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        tags = [tag.strip() for tag in value.split(",") if tag.strip()]
        return queryset.filter(tags__overlap=tags) if tags else queryset

    def filter_text(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        if not value.strip():
            return queryset
        query = SearchQuery(value, search_type="websearch", config="english")
        return queryset.filter(search_vector=query)

    def filter_about(self, queryset: QuerySet[Memory], name: str, value: str) -> QuerySet[Memory]:
        value = value.strip()
        if not value:
            return queryset
        # Through entity_key_unique (key first), then mention_entity_idx.
        mentions = EntityMention.objects.filter(entity__key=value.lower()).values("memory_id")
        words = SearchQuery(value, search_type="phrase", config="english")
        return queryset.filter(Q(pk__in=mentions) | Q(search_vector=words))


class CamelOrderingFilter(OrderingFilter):
    """``ordering=-createdAt``: one of the API's camelCase names for a field that an index
    keeps in order for a project (memories.models.memory, ``memory_list_*``), so a page is
    an index range at any size. Newer rows first with ``-``."""

    fields = {
        "createdAt": "created_at",
        "updatedAt": "updated_at",
        "confidence": "confidence",
        "expiresAt": "expires_at",
    }
    # Orders that were offered once: no index keeps them (a use count changes on every
    # use; an index on it would make each of those writes rewrite every index).
    retired = {"relevanceScore", "accessCount"}
    ordering_description = (
        "Sort by one of "
        + ", ".join(fields)
        + "; prefix '-' for descending. Ties go by id in the same direction; a memory"
        " without an expiry sorts after every expiry."
    )

    def get_ordering(self, request: Any, queryset: Any, view: Any) -> Any:
        raw = request.query_params.get(self.ordering_param)
        if raw is None:
            return self.get_default_ordering(view)
        term = raw.strip()
        descending = term.startswith("-")
        name = self.fields.get(term.lstrip("-"))
        if name is None:
            if "," in term:
                hint = "sort by one field (ties go by id)"
            elif term.lstrip("-") in self.retired:
                hint = "it is no longer a sort order, as no index keeps it"
            else:
                hint = "it is not sortable"
            raise ValidationError(
                {"ordering": [f"{term!r}: {hint}; use one of {', '.join(self.fields)}."]}
            )
        return [f"-{name}" if descending else name]

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "description": self.ordering_description,
                "schema": {
                    "type": "string",
                    "pattern": "^-?(" + "|".join(self.fields) + ")$",
                },
            }
        ]
