"""Health, readiness, metrics, and the answers for a bad request (400, or 413 for a body
over Django's limit), an unknown path (404) and a server error (500, 503): JSON in the error
shape under /api/ and /mcp, a page elsewhere."""

from __future__ import annotations

import hmac
import logging
import sys
import time

from celery import current_app
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET
from psycopg import errors as pg_errors

from ops import metrics
from ops.errors import NO_OAUTH, OAUTH_METADATA, answers_in_json, body_too_large, error_body

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
    response = _error(request, status, code, message)
    if unavailable:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def _error(request: HttpRequest, status: int, code: str, message: str) -> HttpResponse:
    if answers_in_json(request.path):
        return JsonResponse(error_body(code, message), status=status)
    # No request context: its processors could reach for the session in the database.
    page = render_to_string("error.html", {"status": status, "message": message})
    return HttpResponse(page, status=status)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django refused the request (handler400): a form body over DATA_UPLOAD_MAX_MEMORY_SIZE
    is a 413 naming the limit; anything else (a Host not in ALLOWED_HOSTS, too many fields)
    a 400 that tells no more than Django's own page does."""
    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return _error(request, 413, "too_large", body_too_large(limit))
    return _error(request, 400, "bad_request", "The request was refused as malformed.")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: the error shape under /api/ and /mcp, Django's own page elsewhere."""
    if answers_in_json(request.path):
        message = (
            NO_OAUTH
            if request.path.startswith(OAUTH_METADATA)
            else f"Nothing at {request.path}: the API is under /api/ (see /api/docs/), MCP at /mcp."
        )
        return JsonResponse(error_body("not_found", message), status=404)
    return defaults.page_not_found(request, exception)
