"""Counts a page can afford: exact up to a bound, the planner's estimate above it ("about
98,000"). Counting a filter of a million rows exactly reads every one of them on every page;
counting up to the bound reads at most the bound, and the estimate costs a plan.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connections
from django.db.models import IntegerField, QuerySet, Subquery


@dataclass(frozen=True, eq=False)
class Tally:
    """How many: ``value``, or more than it when ``more``."""

    value: int
    more: bool = False
    estimated: bool = False  # ``value`` is the planner's estimate of a count above the bound

    def __str__(self) -> str:
        if self.estimated:
            return f"about {_rounded(self.value):,}"
        return f"{self.value:,}+" if self.more else f"{self.value:,}"

    def __bool__(self) -> bool:
        return self.value > 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Tally):
            return (self.value, self.more) == (other.value, other.more)
        if isinstance(other, int):
            return not self.more and self.value == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.value, self.more))

    @classmethod
    def of(cls, found: int, bound: int) -> Tally:
        """What a count that stopped after ``bound + 1`` rows found."""
        return cls(bound, more=True) if found > bound else cls(found)

    @property
    def one(self) -> bool:
        return self.value == 1 and not self.more


def _rounded(value: int) -> int:
    """Two significant figures: an estimate claims no more."""
    digits = len(str(value))
    return round(value, 2 - digits) if digits > 2 else value


def count_up_to(
    queryset: QuerySet[Any], bound: int | None = None, *, estimate: bool = False
) -> Tally:
    """The rows of ``queryset``, counted no further than ``bound`` (LIST_COUNT_BOUND), "1,000+"
    when the count reaches it. With ``estimate``, a count that reaches the bound gives the
    planner's estimate of them all instead ("about 98,000") when that is above the bound: a
    plan's guess is only ever shown for a set known to be that large."""
    bound = settings.LIST_COUNT_BOUND if bound is None else bound
    rows = queryset.order_by().values("pk")
    tally = Tally.of(rows[: bound + 1].count(), bound)
    if estimate and tally.more:
        planned = planned_rows(rows)
        if planned > bound:
            return Tally(planned, more=True, estimated=True)
    return tally


def planned_rows(queryset: QuerySet[Any]) -> int:
    """How many rows PostgreSQL's planner expects ``queryset`` to return (EXPLAIN, nothing
    run: the table's statistics); 0 for a query that can match nothing."""
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:
        return 0
    with connections[queryset.db].cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


class CountUpTo(Subquery):
    """A subquery's rows counted no further than its slice: ``(SELECT count(*) FROM (...
    LIMIT n))``, one per outer row (a project's counts on the dashboard)."""

    template = "(SELECT count(*) FROM (%(subquery)s) AS bounded)"
    output_field = IntegerField()
