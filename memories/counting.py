"""Counts a page can afford: exact up to a bound, "10,000+" above it. Counting a filter of a
million rows exactly reads every one of them on every page; counting up to the bound reads
at most the bound, through the same index the page walks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import IntegerField, QuerySet, Subquery


@dataclass(frozen=True, eq=False)
class Tally:
    """How many: ``value``, or more than it when ``more``."""

    value: int
    more: bool = False

    def __str__(self) -> str:
        return f"{self.value:,}+" if self.more else f"{self.value:,}"

    def __int__(self) -> int:
        return self.value

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


def count_up_to(queryset: QuerySet[Any], bound: int | None = None) -> Tally:
    """The rows of ``queryset``, counted no further than ``bound`` (LIST_COUNT_BOUND)."""
    bound = settings.LIST_COUNT_BOUND if bound is None else bound
    return Tally.of(queryset.order_by().values("pk")[: bound + 1].count(), bound)


class CountUpTo(Subquery):
    """A subquery's rows counted no further than its slice: ``(SELECT count(*) FROM (...
    LIMIT n))``, one per outer row (a project's counts on the dashboard)."""

    template = "(SELECT count(*) FROM (%(subquery)s) AS bounded)"
    output_field = IntegerField()
