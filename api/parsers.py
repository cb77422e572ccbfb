from __future__ import annotations

import io
import sys
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from api.errors import RequestTooLarge
from memories.text import is_whole_number
from ops.errors import body_too_large


class LimitedJSONParser(JSONParser):
    """JSON bodies up to API_MAX_BODY_BYTES; larger ones are refused before parsing."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        limit = settings.API_MAX_BODY_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and is_whole_number(declared) and int(declared) > limit:
            raise RequestTooLarge(body_too_large(limit, int(declared)))
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise RequestTooLarge(body_too_large(limit))
        try:
            return super().parse(io.BytesIO(body), media_type, parser_context)
        except RecursionError as error:
            raise ParseError(
                f"JSON parse error - nested more than about {sys.getrecursionlimit()} levels"
                " deep: send a flatter document."
            ) from error
