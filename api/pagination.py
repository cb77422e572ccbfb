"""Keyset pagination (memories.keyset) with a capped, validated ``limit`` and named result
lists. A cursor is the last row's keys and the order it belongs to, so a page is one index
range whatever its depth.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from memories.keyset import Order
from memories.text import is_whole_number

BAD_CURSOR = "Invalid cursor: use the `next` URL as given."


class NamedCursorPagination(BasePagination):
    """``{"<items_key>": [...], "next": url|null}``, in the view's ordering filter's order or
    ``ordering``."""

    items_key = "items"
    page_size = 50
    max_page_size = 200
    page_size_query_param = "limit"
    cursor_query_param = "cursor"
    ordering: tuple[str, ...] = ("-created_at", "-id")

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not is_whole_number(raw) or int(raw[:19]) < 1:
            raise ValidationError(
                {"limit": [f"Must be a whole number from 1 to {self.max_page_size}."]}
            )
        # Above the cap is the cap, however many digits (int() refuses thousands of them).
        return self.max_page_size if len(raw) > 18 else min(int(raw), self.max_page_size)

    def get_ordering(self, request: Request, queryset: Any, view: Any) -> list[str]:
        for backend in getattr(view, "filter_backends", None) or []:
            if hasattr(backend, "get_ordering"):
                ordering = backend().get_ordering(request, queryset, view)
                if ordering:
                    return list(ordering)
        return list(getattr(view, "ordering", None) or self.ordering)

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> Any:
        size = self.get_page_size(request)
        order = Order.of(queryset.model, self.get_ordering(request, queryset, view))
        queryset = queryset.order_by(*order.order_by())
        position = self.decode_cursor(request, order)
        if position is not None:
            queryset = queryset.filter(order.after(position))
        rows = list(queryset[: size + 1])
        self.request = request
        self.next_cursor = None
        if len(rows) > size:
            rows = rows[:size]
            self.next_cursor = self.encode_cursor(order, order.position(rows[-1]))
        return rows

    def encode_cursor(self, order: Order, position: list[Any]) -> str:
        text = json.dumps({"o": order.label, "p": position}, separators=(",", ":"))
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    def decode_cursor(self, request: Request, order: Order) -> list[Any] | None:
        raw = request.query_params.get(self.cursor_query_param)
        if raw is None:
            return None
        if raw == "":
            raise ValidationError({"cursor": ["Empty cursor: leave it out for the first page."]})
        try:
            data = json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)))
            if not isinstance(data, dict) or not isinstance(data.get("p"), list):
                raise ValueError("not a cursor")
            if data.get("o") != order.label:
                raise ValidationError(
                    {
                        "cursor": [
                            "This cursor belongs to another order: keep the `ordering` it was"
                            " given with, or leave `cursor` out to start again."
                        ]
                    }
                )
            order.after(data["p"])  # checks each value: a hand-made cursor could hold any
            return list(data["p"])
        except (ValueError, TypeError, OverflowError, binascii.Error, UnicodeDecodeError) as error:
            raise ValidationError({"cursor": [BAD_CURSOR]}) from error

    def get_next_link(self) -> str | None:
        if self.next_cursor is None:
            return None
        url = self.request.build_absolute_uri()
        return replace_query_param(url, self.cursor_query_param, self.next_cursor)

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
