"""Responses that finish their bookkeeping once they have been sent."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpResponse
from opentelemetry import context as trace_context
from rest_framework.response import Response

logger = logging.getLogger(__name__)


class _Then:
    """Work to do after the client has the response (WSGI servers, and Django's test client,
    close a response once its body is written): bookkeeping that the answer does not depend
    on, so it adds nothing to the caller's wait. A failing task is logged; the response was
    already sent."""

    then: list[Callable[[], None]]
    # The trace of the request that made the response: the work after it is in that trace
    # (the request's span has ended by then), not in traces of its own.
    traced: trace_context.Context | None = None

    def close(self) -> None:
        token = trace_context.attach(self.traced) if self.then and self.traced else None
        try:
            for task in self.then:
                try:
                    task()
                except Exception:
                    logger.exception("Work after the response failed: %r", task)
        finally:
            if token is not None:
                trace_context.detach(token)
            super().close()  # type: ignore[misc]


class ThenResponse(_Then, Response):
    def __init__(self, data: Any = None, *, then: list[Callable[[], None]], **kwargs: Any):
        super().__init__(data, **kwargs)
        self.then = then
        self.traced = trace_context.get_current()


class ThenJSONResponse(_Then, HttpResponse):
    """JSON already rendered (as the API renders it)."""

    def __init__(self, content: bytes, *, then: list[Callable[[], None]]):
        super().__init__(content, content_type="application/json")
        self.then = then
        self.traced = trace_context.get_current()
