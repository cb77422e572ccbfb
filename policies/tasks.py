"""Celery tasks: thin, idempotent wrappers of the policy services.

Each takes nothing, so a redelivered or duplicated message does the same work again, which
finds nothing left to do. Only transient database errors are retried, with backoff. A job
stops between batches well before the soft time limit; the next run goes on from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from celery import shared_task
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


def _task(name: str, job: Callable[..., services.JobResult]) -> Any:
    def run() -> dict[str, int | bool]:
        return services.record_run(job, seconds=JOB_SECONDS).summary()

    run.__name__ = run.__qualname__ = name.rsplit(".", 1)[1]
    run.__doc__ = job.__doc__
    return shared_task(name=name, **TASK_OPTIONS)(run)


expire_memories = _task("policies.expire_memories", services.expire_memories)
decay_memories = _task("policies.decay_memories", services.decay_memories)
compress_memories = _task("policies.compress_memories", services.compress_memories)
consolidate_memories = _task("policies.consolidate_memories", services.consolidate_memories)
evict_memories = _task("policies.evict_memories", services.evict_memories)
clear_run_scratch = _task("policies.clear_run_scratch", services.clear_run_scratch)
update_tiers = _task("policies.update_tiers", services.update_tiers)


@shared_task(name="policies.flush_memory_uses", **TASK_OPTIONS)
def flush_memory_uses() -> int:
    """Write the uses of memories noted since the last flush (memories.uses)."""
    return uses.flush()
