"""What every review page shares: the request as htmx leaves it, paging, the partial an
htmx request asks for, where an action returns to, and the pair flags of a page's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core import signing
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.middleware import HtmxDetails

from knowledge import queries
from memories.counting import Tally, count_up_to
from memories.keyset import Order
from memories.models import Memory


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it."""

    htmx: HtmxDetails


PAGE_SIZE = 50


def paginate(request: HtmxHttpRequest, queryset: QuerySet[Any], size: int = PAGE_SIZE) -> Page:
    return Paginator(queryset, size).get_page(request.GET.get("page"))


@dataclass
class KeysetPage:
    """A page that starts after a row (``after``), so it never skips a memory however many
    were written or left the list meanwhile; ``count`` is counted up to a bound."""

    object_list: list[Any]
    count: Tally
    after: str  # where this page starts ("" for the first)
    next_after: str | None

    def __iter__(self) -> Any:
        return iter(self.object_list)

    def __len__(self) -> int:
        return len(self.object_list)


def keyset_page(
    queryset: QuerySet[Any], ordering: Sequence[str], cursor: str, size: int = PAGE_SIZE
) -> KeysetPage:
    """The page of ``queryset`` in ``ordering`` after ``cursor`` (a signed position; one
    that is not ours, or of another order, starts at the first page)."""
    order = Order.of(queryset.model, ordering)
    rows = queryset.order_by(*order.order_by())
    start = None
    if cursor:
        try:
            label, position = signing.loads(cursor, salt="review-keyset")
            start = order.after(position) if label == order.label else None
        except (signing.BadSignature, TypeError, ValueError):
            start = None
    found = list((rows.filter(start) if start is not None else rows)[: size + 1])
    more = len(found) > size
    found = found[:size]
    return KeysetPage(
        object_list=found,
        count=count_up_to(queryset, estimate=True),
        after=cursor if start is not None else "",
        next_after=signing.dumps([order.label, order.position(found[-1])], salt="review-keyset")
        if more
        else None,
    )


def template_for(request: HtmxHttpRequest, template: str, part: str) -> str:
    """The template to render: the page, or its ``part`` when htmx asks for that part only."""
    if request.htmx and request.htmx.target == part:
        return f"{template}#{part}"
    return template


def return_url(request: HtmxHttpRequest, fallback: str) -> str:
    """Where an action returns to without JavaScript: the page it was posted from."""
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


def flag_pairs(memories: Iterable[Memory]) -> None:
    """Mark each memory of a page with its open pairs ("repeats #12"), in one query."""
    rows = list(memories)
    flags = queries.pair_flags([memory.pk for memory in rows])
    for memory in rows:
        memory.flags = flags.get(memory.pk, [])  # type: ignore[attr-defined]
