"""How the policy jobs run: set-based SQL in short batches, safe to run twice or at once.

Each batch is one statement in its own transaction: it picks a bounded set of rows through
the job's partial index, skips rows another writer holds (``FOR NO KEY UPDATE SKIP
LOCKED``) or locks them in id order (the store's one lock order, memories.locks), re-checks
the job's condition on the rows it changes, and writes their history in the same statement,
through the store's set-based writers (memories.history). A batch is therefore
applied whole or not at all; a second run, or a second worker, finds nothing left to do and
writes no second history row. Once a batch commits, its change is announced
(memories.hooks).

Here: the SQL every job shares (a memory's policy, its idle time, a lowered confidence),
the two ways a job goes through its rows (``drain``, ``walk``), the record of each run
(``record_run``) and the Celery tasks' options (``task``, ``task_in_parts``). Each job is a
module of its own beside this one, with its SQL, its function and its task.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from memories import history
from memories.actors import Actor
from memories.models import Memory, MemoryPolicy
from policies import metrics
from policies.models import JobState

BATCH_SIZE = 5000
# The memories a run of a job covers, by id: (after, up to]. Jobs that take one can run as
# several parts at once (``id_parts``), one per worker process.
IdRange = tuple[int, int]
ALL_IDS: IdRange = (0, 2**63 - 1)

MEMORIES = Memory._meta.db_table
POLICIES = MemoryPolicy._meta.db_table
# Every job reads a memory's project policy through this join; global memories (no
# project) and projects without a policy row get the field defaults (``policy_params``).
POLICY_JOIN = f"LEFT JOIN {POLICIES} p ON p.project_id = m.project_id"


def policy(name: str) -> str:
    """SQL for policy field ``name`` of memory ``m`` (its default without a policy row)."""
    return f"coalesce(p.{name}, %(default_{name})s)"


def policy_params() -> dict[str, Any]:
    return {
        f"default_{f.attname}": f.get_default()
        for f in MemoryPolicy._meta.concrete_fields
        if not f.primary_key and f.attname != "project_id"
    }


# The time since memory ``m`` was last given to an agent (or created).
IDLE_SINCE = "coalesce(m.last_accessed_at, m.created_at)"


def days(name: str) -> str:
    return f"make_interval(days => {policy(name)})"


@dataclass
class JobResult:
    """What a policy job changed, per project (None: global memories)."""

    job: str
    batches: int = 0
    changed: dict[int | None, int] = field(default_factory=dict)
    # False when the job stopped at its time budget with work left (the next run goes on).
    finished: bool = True
    deadline: float | None = None
    # What a job looked at and why (JobState.last_report).
    report: dict[str, int] = field(default_factory=dict)

    def out_of_time(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.finished = False
            return True
        return False

    @property
    def total(self) -> int:
        return sum(self.changed.values())

    def add(self, counts: dict[int | None, int]) -> None:
        self.batches += 1
        for project_id, count in counts.items():
            self.changed[project_id] = self.changed.get(project_id, 0) + count

    def summary(self) -> dict[str, int | bool]:
        return {"changed": self.total, "batches": self.batches, "finished": self.finished}


def start(job: str, seconds: float | None) -> JobResult:
    """A job's result, with a deadline ``seconds`` from now: a job stops between batches
    once it has passed (each batch is whole), well before a task's time limit."""
    return JobResult(job, deadline=None if seconds is None else time.monotonic() + seconds)


def record_run(
    job: Callable[..., JobResult], *, name: str | None = None, **kwargs: Any
) -> JobResult:
    """Run a job and keep its last run in its JobState (started, finished, what changed),
    under ``name`` (by default the job's)."""
    name = name or job.__name__
    JobState.objects.update_or_create(name=name, defaults={"last_started_at": timezone.now()})
    started = time.monotonic()
    try:
        result = job(**kwargs)
    except Exception:
        metrics.JOB_RUNS.labels(job.__name__, "failed").inc()
        raise
    finally:
        metrics.JOB_SECONDS.labels(job.__name__).observe(time.monotonic() - started)
    metrics.JOB_RUNS.labels(job.__name__, "complete" if result.finished else "partial").inc()
    metrics.JOB_CHANGED.labels(job.__name__).inc(result.total)
    JobState.objects.filter(name=name).update(
        last_finished_at=timezone.now(),
        last_changed=result.total,
        last_batches=result.batches,
        last_complete=result.finished,
        last_report=result.report,
    )
    return result


def params(now: datetime | None, batch_size: int, actor: Actor, **extra: Any) -> dict[str, Any]:
    """A job statement's parameters: the policy defaults, the time, the batch size and the
    actor its history rows name (memories.history.insert_events)."""
    return {
        **policy_params(),
        **history.actor_params(actor),
        "now": now or timezone.now(),
        "batch_size": batch_size,
        **extra,
    }


def changed_counts(rows: Iterable[Sequence[Any]]) -> dict[int | None, int]:
    return {project_id: count for project_id, count in rows if count}


def drain(job: str, sql: str, params: dict[str, Any], seconds: float | None) -> JobResult:
    """Run a batch statement whose rows leave its filter once changed, until a batch is not
    full. The statement returns (project_id, changed) rows."""
    result = start(job, seconds)
    while not result.out_of_time():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            counts = changed_counts(cursor.fetchall())
            history.written(counts)
        result.add(counts)
        if sum(counts.values()) < params["batch_size"]:
            break
    return result


# A window of the next ``batch_size`` rows of a walk, by id after the last window's end.
_WINDOW = """win AS (
    SELECT id FROM {table} WHERE {walk} AND id > %(after)s AND id <= %(ids_upto)s
    ORDER BY id LIMIT %(batch_size)s
)"""
# The last statement of a walk's batch: the window's end (NULL past the last row) and the
# changed rows per project.
WALK_RESULT = """
SELECT (SELECT max(id) FROM win), c.project_id, c.n
FROM (SELECT 1) AS one LEFT JOIN (
    SELECT project_id, count(*) AS n FROM changed GROUP BY project_id
) AS c ON true
"""


def walk(
    job: str,
    sql: str,
    params: dict[str, Any],
    seconds: float | None = None,
    *,
    announce: bool = True,
    resume: bool = False,
    ids: IdRange = ALL_IDS,
    into: JobResult | None = None,
) -> JobResult:
    """Run a batch statement over consecutive id windows of the job's partial index, within
    ``ids``: each statement reads at most ``batch_size`` rows, whatever the table's size.
    With ``resume`` the walk starts where the job's last walk ended (its JobState cursor),
    which each batch moves in its own transaction. ``into``: add to that result, within its
    deadline, instead of a new one. ``announce``: whether the changes are announced
    (memories.hooks); bookkeeping that no reader of memories sees is not."""
    result = into or start(job, seconds)
    after = JobState.objects.get_or_create(name=job)[0].cursor if resume else ids[0]
    while not result.out_of_time():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, {**params, "after": after, "ids_upto": ids[1]})
            rows = cursor.fetchall()
            counts = changed_counts((project_id, n) for _, project_id, n in rows)
            if resume and rows[0][0] is not None:
                JobState.objects.filter(name=job).update(cursor=rows[0][0])
            if announce:
                history.written(counts)
        result.add(counts)
        if rows[0][0] is None:
            break
        after = rows[0][0]
    return result


def id_parts(count: int) -> list[IdRange]:
    """``count`` ranges of ids that together cover every active memory, of about equal size
    (ids are dense): for a job run as parts at once."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id) - 1, max(id) FROM {MEMORIES} WHERE active")
        first, last = cursor.fetchone()
    if first is None or count <= 1:
        return [ALL_IDS]
    step = -(-(last - first) // count)
    bounds = [first + step * part for part in range(count)] + [ALL_IDS[1]]
    bounds[0] = ALL_IDS[0]
    return list(itertools.pairwise(bounds))


def walk_statement(walk: str, body: str) -> str:
    window = _WINDOW.format(table=MEMORIES, walk=walk)
    return f"WITH {window}, {body}{WALK_RESULT}"


def lowered(amount: str) -> str:
    """Memory ``m``'s confidence less ``amount``: never below 0, rounded like run outcomes."""
    return f"round(greatest(m.confidence - {amount}, 0)::numeric, 6)::float8"


# --- Celery tasks -----------------------------------------------------------------------------
# Thin, idempotent wrappers of the jobs. Each takes nothing (or, for a part, its range of
# ids), so a redelivered or duplicated message does the same work again, which finds nothing
# left to do. Only transient database errors are retried, with backoff. A job stops between
# batches well before the soft time limit; the next run goes on from there.

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


def register(name: str, job: Callable[..., Any], run: Callable[..., Any], **options: Any) -> Any:
    """``run`` as the Celery task ``name``, documented by the job it runs."""
    run.__name__ = run.__qualname__ = name.rsplit(".", 1)[1]
    run.__doc__ = job.__doc__
    return shared_task(name=name, **TASK_OPTIONS, **options)(run)


def task(name: str, job: Callable[..., JobResult]) -> Any:
    def run() -> dict[str, int | bool]:
        return record_run(job, seconds=JOB_SECONDS).summary()

    return register(name, job, run)


def task_in_parts(name: str, job: Callable[..., JobResult]) -> Any:
    """A job that covers a range of ids. Sent by the beat without one, the task sends itself
    once per part (``POLICY_JOB_PARTS``, one per worker process; to the queue it came from),
    each with its range, so the parts run at once; each part records its own run. With one
    part it runs the whole job itself."""

    def run(
        self: Task,
        part: int | None = None,
        parts: int = 1,
        after: int = ALL_IDS[0],
        upto: int = ALL_IDS[1],
    ) -> dict[str, int | bool]:
        if part is None:
            ranges = id_parts(settings.POLICY_JOB_PARTS)
            if len(ranges) > 1:
                queue = (self.request.delivery_info or {}).get("routing_key")
                for number, (first, last) in enumerate(ranges, start=1):
                    self.apply_async(
                        kwargs={"part": number, "parts": len(ranges), "after": first, "upto": last},
                        queue=queue,
                    )
                return {"parts": len(ranges)}
        label = job.__name__ if parts == 1 else f"{job.__name__}, part {part} of {parts}"
        return record_run(job, name=label, seconds=JOB_SECONDS, ids=(after, upto)).summary()

    return register(name, job, run, bind=True)
