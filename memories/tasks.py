"""The store's Celery task, found by Celery's autodiscovery: a bulk edit's batches
(memories.services.bulk), run in the background."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.db import InterfaceError, OperationalError

from memories.services import bulk

TRANSIENT = (OperationalError, InterfaceError)
SOFT_TIME_LIMIT = 300
# A task starts no batch after this many seconds (a batch takes about a second); the rest
# of the job goes on in the next task it sends.
JOB_SECONDS = SOFT_TIME_LIMIT - 60


@shared_task(
    name="memories.run_bulk_edit",
    bind=True,
    # Idempotent: a redelivered message goes on from the first memory not done.
    acks_late=True,
    autoretry_for=TRANSIENT,
    retry_backoff=5,
    retry_backoff_max=300,
    retry_jitter=True,
    max_retries=5,
    soft_time_limit=SOFT_TIME_LIMIT,
    time_limit=SOFT_TIME_LIMIT + 60,
)
def run_bulk_edit(self: Task, job_id: int) -> dict[str, Any]:
    """Run a bulk edit's batches; with work left at the time budget, send itself again."""
    try:
        job = bulk.bulk_edit_run(job_id=job_id, seconds=JOB_SECONDS)
    except TRANSIENT:
        raise
    except SoftTimeLimitExceeded:
        # The batch under way rolled back whole: the next task does it again.
        self.apply_async(args=[job_id], queue=_queue(self))
        return {"job": job_id, "status": "running"}
    except Exception as error:
        bulk.bulk_edit_fail(job_id=job_id, error=f"{type(error).__name__}: {error}")
        raise
    if not job.finished:
        self.apply_async(args=[job_id], queue=_queue(self))
    return {"job": job_id, "status": job.status, "done": job.done, "failed": job.failed}


def _queue(task: Task) -> str | None:
    return (task.request.delivery_info or {}).get("routing_key")
