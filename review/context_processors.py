"""What every review template needs."""

from __future__ import annotations

from functools import cache

from django.http import HttpRequest
from django.urls import reverse


@cache
def _memory_prefix() -> str:
    return reverse("review:memory", args=[0]).removesuffix("0/")


def review_urls(request: HttpRequest) -> dict[str, str]:
    """``memory_prefix``: a memory's pages are ``{{ memory_prefix }}{{ pk }}/…`` (a list of
    50 rows with five links each builds them without reversing 250 URLs)."""
    return {"memory_prefix": _memory_prefix()}
