"""``Idempotency-Key``: a retried create replays the first response instead of making a twin."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable

from django.db import transaction
from django.http import HttpResponse
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from api.errors import ConflictError
from memories.models import IdempotencyRecord, Project
from memories.secrets import scan

HEADER = "Idempotency-Key"
KEY_PATTERN = r"^[!-~]{1,200}$"  # 1 to 200 visible ASCII characters: a UUID fits


def _fingerprint(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, default=str)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def idempotent(request: Request, project: Project, produce: Callable[[], Response]) -> HttpResponse:
    """Run ``produce`` once per (project, key); later calls with the key get the same response.

    The record is inserted first in the same transaction as the write, so a
    concurrent retry waits on the unique index and then replays the committed
    response. If the write fails, the record goes with it and a retry runs anew.
    """
    key = request.headers.get(HEADER)
    if key is None:
        return produce()
    if not re.fullmatch(KEY_PATTERN, key):
        raise ValidationError(
            {HEADER: ["Must be 1 to 200 visible ASCII characters with no spaces, e.g. a UUID."]}
        )
    if scan(key, HEADER):
        raise ValidationError(
            {
                HEADER: [
                    "Looks like a secret: send a random id (e.g. a UUID) as the Idempotency-Key."
                ]
            }
        )
    fingerprint = _fingerprint(request)
    with transaction.atomic():
        record, created = IdempotencyRecord.objects.get_or_create(
            project=project, key=key, defaults={"request_hash": fingerprint}
        )
        if not created:
            if record.request_hash != fingerprint:
                raise ConflictError(
                    f"{HEADER} {key!r} was used for a different request; use a new key."
                )
            return HttpResponse(
                record.response_body,
                status=record.response_status,
                content_type="application/json",
                headers={"Idempotent-Replayed": "true"},
            )
        response = produce()
        record.response_status = response.status_code
        # Stored as rendered, so a replay is the same JSON to the byte.
        record.response_body = JSONRenderer().render(response.data).decode()
        record.save(update_fields=["response_status", "response_body"])
    return response
