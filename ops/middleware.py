"""Request counts and latency by endpoint (the URL pattern's name, never the raw path)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from ops.errors import error_body
from ops.metrics import HTTP_REQUESTS, HTTP_SECONDS


class MetricsMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        match = request.resolver_match
        endpoint = match.view_name if match else "unmatched"
        method = request.method or "-"
        HTTP_SECONDS.labels(method, endpoint).observe(time.perf_counter() - started)
        HTTP_REQUESTS.labels(method, endpoint, str(response.status_code)).inc()
        return response


# Scripts and styles come from this site only (htmx and the review pages' script are static
# files; no inline script anywhere); inline style attributes are allowed for htmx's indicator.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; "
    "form-action 'self'; object-src 'none'"
)
PERMISSIONS_POLICY = "camera=(), microphone=(), geolocation=(), payment=(), usb=()"


class BodyLengthMiddleware:
    """A body sent in chunks without a Content-Length reaches Django as no body at all (WSGI
    reads only what Content-Length announces): say so with a 411, instead of answering the
    empty request it would otherwise seem to be."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not request.META.get("CONTENT_LENGTH"):
            message = (
                "The body was sent in chunks without a Content-Length header, which this"
                " server cannot read: send it with a Content-Length."
            )
            if request.path.startswith("/api/"):
                return JsonResponse(error_body("length_required", message), status=411)
            return HttpResponse(message, status=411, content_type="text/plain")
        return self.get_response(request)


class SecurityHeadersMiddleware:
    """The headers Django's SecurityMiddleware does not set: a content security policy and
    a permissions policy."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response
