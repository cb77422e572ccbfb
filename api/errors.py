"""One error shape for every 4xx: {"error": {"code", "message", "fields"}}."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from memories.services import Conflict
from ops.errors import PASS_KEY, error_body

_CODES = {
    exceptions.ValidationError: "invalid",
    exceptions.ParseError: "malformed_request",
    exceptions.AuthenticationFailed: "unauthenticated",
    exceptions.NotAuthenticated: "unauthenticated",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
}


class ConflictError(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the stored state."
    default_code = "conflict"


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error details as {"field" or "field[0]": [messages]}."""
    if isinstance(detail, dict):
        flat: dict[str, list[str]] = {}
        for key, value in detail.items():
            name = f"{prefix}[{key}]" if isinstance(key, int) else camel(str(key))
            name = name if not prefix or isinstance(key, int) else f"{prefix}.{name}"
            flat |= _flatten(value, name)
        return flat
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return {prefix or "nonFieldErrors": [str(item) for item in detail]}
        flat = {}
        for index, item in enumerate(detail):
            flat |= _flatten(item, f"{prefix}[{index}]")
        return flat
    return {prefix or "nonFieldErrors": [str(detail)]}


def _validation_message(fields: dict[str, list[str]]) -> str:
    parts = [f"{name}: {' '.join(messages)}" for name, messages in fields.items()]
    return "Fix these fields and send again. " + " ".join(parts)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DjangoValidationError):
        detail = (
            exc.message_dict if hasattr(exc, "error_dict") else {"nonFieldErrors": exc.messages}
        )
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, Conflict):
        exc = ConflictError(str(exc))
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    response = exception_handler(exc, context)
    if response is None:
        return None
    assert isinstance(exc, exceptions.APIException | Http404)
    code = next(
        (code for kind, code in _CODES.items() if isinstance(exc, kind)),
        getattr(exc, "default_code", "error"),
    )
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        response.data = error_body(code, _validation_message(fields), fields)
    elif isinstance(exc, exceptions.NotAuthenticated):
        response.data = error_body(code, f"No API key was sent: {PASS_KEY}.")
    else:
        response.data = error_body(code, str(getattr(exc, "detail", None) or exc))
    return response


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Unknown paths under /api/ answer with the error shape, not an HTML page."""
    return JsonResponse(
        error_body("not_found", f"No API endpoint at {request.path}; see /api/docs/."),
        status=404,
    )
