"""Gives back a request's concurrency slot (api.throttling.ConcurrencyThrottle) once its
response is done, whatever happened to it."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class ReleaseSlotMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            return self.get_response(request)
        finally:
            release = getattr(request, "release_slot", None)
            if release is not None:
                release()
