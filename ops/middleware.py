"""Request counts and latency by endpoint (the URL pattern's name, never the raw path)."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from memories.text import is_whole_number
from ops.errors import answers_in_json, body_too_large, error_body
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
    """Bodies are judged by their Content-Length before anything reads them.

    Under /api/ and /mcp, a body over API_MAX_BODY_BYTES is answered 413 in the error shape,
    naming the limit, without being read (Django would read up to its own, larger limit and
    answer a 400 page past it). A body sent in chunks without a Content-Length reaches Django
    as no body at all (WSGI reads only what Content-Length announces): a 411 says so, instead
    of answering the empty request it would otherwise seem to be."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        in_json = answers_in_json(request.path)
        declared = request.META.get("CONTENT_LENGTH") or ""
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not declared:
            message = (
                "The body was sent in chunks without a Content-Length header, which this"
                " server cannot read: send it with a Content-Length."
            )
            if in_json:
                return JsonResponse(error_body("length_required", message), status=411)
            return HttpResponse(message, status=411, content_type="text/plain")
        limit = settings.API_MAX_BODY_BYTES
        if in_json and is_whole_number(declared) and int(declared) > limit:
            message = body_too_large(limit, int(declared))
            return JsonResponse(error_body("too_large", message), status=413)
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
