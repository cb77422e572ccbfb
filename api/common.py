"""What every endpoint module of the API shares: its OpenAPI path and header parameters,
the error responses it documents, a validated body, and a 201 with the new address."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import status
from rest_framework.response import Response
from rest_framework.reverse import reverse

from api.fields import StrictInput
from api.idempotency import HEADER as IDEMPOTENCY_HEADER
from api.idempotency import KEY_PATTERN as IDEMPOTENCY_KEY_PATTERN
from api.serializers.errors import ErrorOut

PROJECT_PARAM = OpenApiParameter(
    "project", OpenApiTypes.STR, OpenApiParameter.PATH, description="Project id or slug."
)
MEMORY_PARAM = OpenApiParameter("memory_id", OpenApiTypes.INT, OpenApiParameter.PATH)
RUN_PARAM = OpenApiParameter("run_id", OpenApiTypes.INT, OpenApiParameter.PATH)
IDEMPOTENCY_PARAM = OpenApiParameter(
    IDEMPOTENCY_HEADER,
    {"type": "string", "pattern": IDEMPOTENCY_KEY_PATTERN},
    OpenApiParameter.HEADER,
    description="A retry with the same key and body replays the first response.",
)


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    described = {
        400: "Invalid input: see `error.fields`.",
        401: "No or unknown API key / not signed in.",
        403: "Not allowed for this caller.",
        404: "Not found (or not visible to this caller).",
        409: "Conflicts with the stored state.",
        413: "Request body too large.",
        415: "Send JSON.",
        429: "Too many requests for this key.",
    }
    wanted = {401, 404, 429, *codes}
    return {code: OpenApiResponse(ErrorOut, description=described[code]) for code in wanted}


WRITE_ERRORS = (400, 403, 413, 415)


def created_response(body: dict[str, Any], route: str, **kwargs: Any) -> Response:
    """201 with the new resource's address in ``Location``."""
    return Response(
        body, status=status.HTTP_201_CREATED, headers={"Location": reverse(route, kwargs=kwargs)}
    )


def valid(serializer_class: type[StrictInput], data: Any) -> dict[str, Any]:
    """The validated body, or a 400 naming each field to fix."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
