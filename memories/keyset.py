"""Keyset paging: a page starts after the last row of the one before, by a row comparison
that an index in the same order answers as a range, so page 1,000 costs what page 1 does
and no row is skipped or seen twice however many others are written or deleted meanwhile
(a row whose own key changes between two pages moves in the order, as it should).

An order is one or more fields in one direction, ending with the primary key (added when
missing), e.g. ``("-created_at", "-id")``. A nullable field sorts as if empty meant
"never" (a date-time of infinity): ``COALESCE(expires_at, 'infinity')``, the expression
the matching index is built on, so empty values are neither lost nor a second walk.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import models
from django.db.models import BooleanField, F, Func, Value
from django.db.models.expressions import Expression
from django.db.models.functions import Cast, Coalesce

from memories.text import to_utc

INFINITY = "infinity"


def never() -> Expression:
    """A date-time after every other: what an empty expiry sorts as."""
    return Cast(Value(INFINITY), models.DateTimeField())


def or_never(name: str) -> Expression:
    """``name``, or "never" when it is empty: the expression an index on a nullable
    date-time sorts by."""
    return Coalesce(F(name), never())


@dataclass(frozen=True)
class Key:
    name: str
    field: models.Field[Any, Any]

    @property
    def nullable(self) -> bool:
        return bool(self.field.null)

    def expression(self) -> Expression | F:
        return or_never(self.name) if self.nullable else F(self.name)


@dataclass(frozen=True)
class Order:
    """How a list is sorted: its keys, all in one direction."""

    keys: tuple[Key, ...]
    descending: bool

    @classmethod
    def of(cls, model: type[models.Model], ordering: Sequence[str]) -> Order:
        terms = [term for term in ordering if term]
        if not terms:
            raise ImproperlyConfigured("A keyset order needs at least one field.")
        descending = terms[0].startswith("-")
        names = []
        for term in terms:
            if term.startswith("-") != descending:
                raise ImproperlyConfigured(f"{ordering}: keyset orders go one way only.")
            name = term.lstrip("-")
            names.append(model._meta.pk.name if name == "pk" else name)
        pk = model._meta.pk.name
        if names[-1] != pk:
            names.append(pk)
        keys = []
        for name in names:
            field = model._meta.get_field(name)
            assert isinstance(field, models.Field), f"{name} is not a column"
            if field.null and not isinstance(field, models.DateTimeField):
                raise ImproperlyConfigured(f"{name}: only a nullable date-time can be a key.")
            keys.append(Key(name, field))
        return cls(tuple(keys), descending)

    @property
    def label(self) -> str:
        sign = "-" if self.descending else ""
        return ",".join(sign + key.name for key in self.keys)

    def order_by(self) -> list[Any]:
        return [
            key.expression().desc() if self.descending else key.expression().asc()
            for key in self.keys
        ]

    def position(self, row: Any) -> list[Any]:
        """The keys' values of ``row`` (a model instance or a dict), as JSON can hold them."""
        values = []
        for key in self.keys:
            value = row[key.name] if isinstance(row, dict) else getattr(row, key.name)
            values.append(value.isoformat() if isinstance(value, datetime) else value)
        return values

    def after(self, position: Sequence[Any]) -> RowCompare:
        """The rows after ``position`` in this order. Raises ValueError for a position that
        is not one of this order's (a hand-made cursor)."""
        if len(position) != len(self.keys):
            raise ValueError("a position has one value per key")
        values = [_value(key, raw) for key, raw in zip(self.keys, position, strict=True)]
        return RowCompare(
            [key.expression() for key in self.keys], values, "<" if self.descending else ">"
        )


def _value(key: Key, raw: Any) -> Expression:
    if raw is None:
        if not key.nullable:
            raise ValueError(f"{key.name} is never empty")
        return never()
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ValueError(f"{key.name}: not a value")
    if isinstance(raw, str) and "\x00" in raw:
        raise ValueError(f"{key.name}: NUL is in no stored value")
    try:
        value = key.field.to_python(raw)
        if isinstance(key.field, models.DateTimeField):
            if not isinstance(raw, str) or value is None:
                raise ValueError(f"{key.name} is not a date and time")
            value = to_utc(value, key.name)  # an offset or a year PostgreSQL refuses
    except (ValidationError, OverflowError, TypeError) as error:
        raise ValueError(f"{key.name}: {error}") from None
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise ValueError(f"{key.name} out of range")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{key.name} is not a finite number")
    return Value(value, output_field=key.field)


class RowCompare(Func):
    """``(a, b, id) < (x, y, z)``: PostgreSQL compares rows left to right and a btree on
    ``(a, b, id)`` answers it as one range (an OR of the same would be a filter)."""

    output_field = BooleanField()
    conditional = True

    def __init__(self, left: list[Any], right: list[Any], operator: str) -> None:
        super().__init__(*left, *right)
        self.width = len(left)
        self.operator = operator

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        parts, params = [], []
        for expression in self.get_source_expressions():
            sql, more = compiler.compile(expression)
            parts.append(sql)
            params.extend(more)
        left = ", ".join(parts[: self.width])
        right = ", ".join(parts[self.width :])
        return f"({left}) {self.operator} ({right})", params
