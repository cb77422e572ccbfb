"""Celery tasks: thin, idempotent wrappers of the policy services.

Each takes nothing, so a redelivered or duplicated message does the same work again, which
finds nothing left to do. Only transient database errors are retried, with backoff. A job
stops between batches well before the soft time limit; the next run goes on from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from memories import uses
from policies import services

TRANSIENT = (OperationalError, InterfaceError)
SOFT_TIME_LIMIT = 240
# A job starts no new batch after this many seconds (a batch takes a few seconds at most).
JOB_SECONDS = SOFT_TIME_LIMIT - 60
TASK_OPTIONS = {
    "acks_late": True,
    "autoretry_for": TRANSIENT,
    "retry_backoff": 5,
    "retry_backoff_max": 300,
    "retry_jitter": True,
    "max_retries": 5,
    "soft_time_limit": SOFT_TIME_LIMIT,
    "time_limit": SOFT_TIME_LIMIT + 60,
}


def _register(name: str, job: Callable[..., Any], run: Callable[..., Any], **options: Any) -> Any:
    """``run`` as the Celery task ``name``, documented by the job it runs."""
    run.__name__ = run.__qualname__ = name.rsplit(".", 1)[1]
    run.__doc__ = job.__doc__
    return shared_task(name=name, **TASK_OPTIONS, **options)(run)


def _task(name: str, job: Callable[..., services.JobResult]) -> Any:
    def run() -> dict[str, int | bool]:
        return services.record_run(job, seconds=JOB_SECONDS).summary()

    return _register(name, job, run)


def _task_in_parts(name: str, job: Callable[..., services.JobResult]) -> Any:
    """A job that covers a range of ids. Sent by the beat without one, the task sends itself
    once per part (``POLICY_JOB_PARTS``, one per worker process; to the queue it came from),
    each with its range, so the parts run at once; each part records its own run. With one
    part it runs the whole job itself."""

    def run(
        self: Task,
        part: int | None = None,
        parts: int = 1,
        after: int = services.ALL_IDS[0],
        upto: int = services.ALL_IDS[1],
    ) -> dict[str, int | bool]:
        if part is None:
            ranges = services.id_parts(settings.POLICY_JOB_PARTS)
            if len(ranges) > 1:
                queue = (self.request.delivery_info or {}).get("routing_key")
                for number, (first, last) in enumerate(ranges, start=1):
                    self.apply_async(
                        kwargs={"part": number, "parts": len(ranges), "after": first, "upto": last},
                        queue=queue,
                    )
                return {"parts": len(ranges)}
        label = job.__name__ if parts == 1 else f"{job.__name__}, part {part} of {parts}"
        return services.record_run(
            job, name=label, seconds=JOB_SECONDS, ids=(after, upto)
        ).summary()

    return _register(name, job, run, bind=True)


expire_memories = _task_in_parts("policies.expire_memories", services.expire_memories)
decay_memories = _task_in_parts("policies.decay_memories", services.decay_memories)
compress_memories = _task("policies.compress_memories", services.compress_memories)
consolidate_memories = _task("policies.consolidate_memories", services.consolidate_memories)
evict_memories = _task("policies.evict_memories", services.evict_memories)
clear_run_scratch = _task("policies.clear_run_scratch", services.clear_run_scratch)
update_tiers = _task("policies.update_tiers", services.update_tiers)


@shared_task(name="policies.flush_memory_uses", **TASK_OPTIONS)
def flush_memory_uses() -> int:
    """Write the uses of memories noted since the last flush (memories.uses)."""
    return uses.flush()
