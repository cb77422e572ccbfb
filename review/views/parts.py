"""What every review page shares: the request as htmx leaves it, paging, the partial an
htmx request asks for, where an action returns to, and the pair flags of a page's rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.middleware import HtmxDetails

from knowledge import queries
from memories.models import Memory


class HtmxHttpRequest(HttpRequest):
    """A request as django-htmx's middleware leaves it."""

    htmx: HtmxDetails


PAGE_SIZE = 50


def paginate(request: HtmxHttpRequest, queryset: QuerySet[Any], size: int = PAGE_SIZE) -> Page:
    return Paginator(queryset, size).get_page(request.GET.get("page"))


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
