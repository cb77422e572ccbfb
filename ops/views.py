"""Health, readiness, metrics, and the page for a server error."""

from __future__ import annotations

import hmac
import logging
import sys
import time

from celery import current_app
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from psycopg import errors as pg_errors

from ops import metrics
from ops.errors import error_body

logger = logging.getLogger(__name__)

# Errors that mean the database cannot be reached or is going away, not that a statement is
# wrong: the request may be sent again once it is back.
UNAVAILABLE = (
    OperationalError,
    InterfaceError,
    pg_errors.OperationalError,
    pg_errors.InterfaceError,
)
RETRY_AFTER_SECONDS = 5


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    """The process is alive and answers (touches nothing else)."""
    return JsonResponse({"status": "ok"})


def _problem(exc: Exception) -> str:
    """An error in one line: its kind and the first line of its message."""
    return f"{type(exc).__name__}: {next(iter(str(exc).splitlines()), '')}".strip()


def _check_database() -> str | None:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        return _problem(exc)
    return None


def _check_broker() -> str | None:
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, interval_start=0, timeout=1)
    except Exception as exc:  # any transport's error means the same: not reachable
        return _problem(exc)
    return None


@require_GET
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    """Ready for traffic: the database and the broker answer. 503 names what does not."""
    checks = {}
    for name, check in (("database", _check_database), ("broker", _check_broker)):
        started = time.perf_counter()
        problem = check()
        checks[name] = {
            "ok": problem is None,
            "ms": round((time.perf_counter() - started) * 1000, 1),
            **({"error": problem} if problem else {}),
        }
    ready = all(check["ok"] for check in checks.values())
    return JsonResponse({"ready": ready, "checks": checks}, status=200 if ready else 503)


def _metrics_allowed(request: HttpRequest) -> bool:
    if request.user.is_authenticated and request.user.is_staff:
        return True
    token = settings.METRICS_TOKEN
    given = request.headers.get("Authorization", "")
    return bool(token) and hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


@csrf_exempt
@require_GET
@never_cache
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus metrics, for staff users or ``Authorization: Bearer $METRICS_TOKEN``."""
    if not _metrics_allowed(request):
        return JsonResponse(
            error_body(
                "forbidden",
                "Metrics are for staff users or a scraper sending "
                "'Authorization: Bearer <METRICS_TOKEN>'.",
            ),
            status=403,
        )
    return HttpResponse(
        metrics.exposition(), content_type="text/plain; version=0.0.4; charset=utf-8"
    )


def _cancelled(exc: BaseException | None) -> bool:
    """PostgreSQL cancelled the statement (its statement timeout)."""
    while exc is not None:
        if getattr(exc, "sqlstate", None) == "57014":  # query_canceled
            return True
        exc = exc.__cause__
    return False


def server_error(request: HttpRequest) -> HttpResponse:
    """A 500, or a 503 when the database is unreachable: a client may send the request again
    after Retry-After. API paths answer with the error shape, pages with a page."""
    exc = sys.exc_info()[1]
    unavailable = isinstance(exc, UNAVAILABLE)
    status = 503 if unavailable else 500
    if unavailable and _cancelled(exc):
        logger.warning("A statement ran past the statement timeout: %s", request.path)
        code, message = (
            "too_slow",
            "The request took longer than the server allows, and was stopped with nothing"
            " changed. Narrow it (fewer or simpler paths and patterns), or send it again in"
            f" {RETRY_AFTER_SECONDS} seconds.",
        )
    elif unavailable:
        logger.warning("Database unavailable: %s", type(exc).__name__)
        code, message = (
            "unavailable",
            f"The database is unreachable. Send the request again in {RETRY_AFTER_SECONDS} "
            "seconds; with the same Idempotency-Key a write is never applied twice.",
        )
    else:
        code, message = "server_error", "Something went wrong on our side; it has been logged."
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(error_body(code, message), status=status)
    else:
        # No request context: its processors could reach for the session in the database.
        page = render_to_string("error.html", {"status": status, "message": message})
        response = HttpResponse(page, status=status)
    if unavailable:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
