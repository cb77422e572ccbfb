"""Request counts and latency by endpoint (the URL pattern's name, never the raw path)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

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
