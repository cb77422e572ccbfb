"""Cursor pagination with a capped, validated ``limit`` and named result lists."""

from __future__ import annotations

import math
from typing import Any

from django.db import models
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from memories.text import is_whole_number


class NamedCursorPagination(CursorPagination):
    """``{"<items_key>": [...], "next": url|null}``."""

    items_key = "items"
    page_size = 50
    max_page_size = 200
    page_size_query_param = "limit"
    ordering = ("-created_at", "-id")

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not is_whole_number(raw) or int(raw) < 1:
            raise ValidationError(
                {"limit": [f"Must be a whole number from 1 to {self.max_page_size}."]}
            )
        return min(int(raw), self.max_page_size)

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> Any:
        self.model = queryset.model  # whose field the cursor's position is a value of
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Request) -> Any:
        if request.query_params.get(self.cursor_query_param) == "":
            raise ValidationError({"cursor": ["Empty cursor: leave it out for the first page."]})
        try:
            cursor = super().decode_cursor(request)
            if cursor is not None and cursor.position is not None:
                self._check_position(cursor.position)
            return cursor
        except Exception as error:  # DRF raises NotFound for a bad cursor; it is bad input
            raise ValidationError(
                {"cursor": ["Invalid cursor: use the `next` URL as given."]}
            ) from error

    def _check_position(self, position: str) -> None:
        """A position the database can compare with the first ordering field (a hand-made
        cursor could hold any text): raises on a value of the wrong type or range."""
        name = self.ordering[0].lstrip("-")
        field = self.model._meta.get_field(name)
        value = field.to_python(position)
        if isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise ValueError(f"{name} out of range")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name} is not a finite number")
        if isinstance(field, models.DateTimeField) and value is None:
            raise ValueError(f"{name} is not a date and time")

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": self.cursor_query_param,
                "required": False,
                "in": "query",
                "description": "Where the page starts: take it from `next`.",
                "schema": {"type": "string", "minLength": 1},
            },
            {
                "name": self.page_size_query_param,
                "required": False,
                "in": "query",
                "description": f"Page size (default {self.page_size}; above "
                f"{self.max_page_size} is capped to {self.max_page_size}).",
                "schema": {"type": "integer", "minimum": 1},
            },
        ]

    def get_paginated_response(self, data: Any) -> Response:
        return Response({self.items_key: data, "next": self.get_next_link()})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": [self.items_key, "next"],
            "properties": {
                self.items_key: schema,
                "next": {"type": "string", "format": "uri", "nullable": True},
            },
        }


class MemoryPagination(NamedCursorPagination):
    items_key = "memories"


class EventPagination(NamedCursorPagination):
    items_key = "events"
