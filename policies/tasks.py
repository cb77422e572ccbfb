"""Celery tasks: thin, idempotent wrappers of the policy services.

Each takes nothing, so a redelivered or duplicated message does the same work again, which
finds nothing left to do. Only transient database errors are retried, with backoff.
"""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from policies import services

TRANSIENT = (OperationalError, InterfaceError)
TASK_OPTIONS = {
    "acks_late": True,
    "autoretry_for": TRANSIENT,
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 5,
    "soft_time_limit": 240,
    "time_limit": 300,
}


@shared_task(name="policies.expire_memories", **TASK_OPTIONS)
def expire_memories() -> dict[str, int]:
    result = services.expire_memories()
    return {"changed": result.total, "batches": result.batches}
