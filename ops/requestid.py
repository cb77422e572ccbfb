"""A request id on every request and in every log line written while it is handled.

Taken from the caller's ``X-Request-ID`` when it is a sane token (so a trace crosses
services), otherwise made here; sent back in the response's ``X-Request-ID``. A Celery task
logs under its task id.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable
from contextvars import ContextVar

from django.core.signals import request_finished
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

HEADER = "X-Request-ID"
NONE = "-"
# Letters, digits and a few separators, at most 128 characters: anything else (spaces, line
# breaks, quotes) could forge log lines or headers, and is replaced by an id of our own.
_SANE = re.compile(r"[A-Za-z0-9._:\-]{1,128}")

current: ContextVar[str] = ContextVar("request_id", default=NONE)


def new_id() -> str:
    return uuid.uuid4().hex


def accepted(value: str | None) -> str:
    """The caller's id when it is sane, else a new one."""
    return value if value and _SANE.fullmatch(value) else new_id()


class RequestIdMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = accepted(request.headers.get(HEADER))
        request.request_id = request_id  # type: ignore[attr-defined]
        # Kept until the response is closed: Django logs a 4xx or 5xx after the middleware.
        current.set(request_id)
        response = self.get_response(request)
        response[HEADER] = request_id
        return response


@receiver(request_finished)
def _forget(**kwargs: object) -> None:
    current.set(NONE)


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every record as ``request_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current.get()
        return True
