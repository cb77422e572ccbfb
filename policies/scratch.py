"""Run scratch: memories of scope ``run`` are archived a while after their run finished."""

from __future__ import annotations

from datetime import datetime

from memories import history
from memories.actors import Actor
from memories.models import EventAction, Run, RunStatus, Scope
from memories.models.choices import sql_literal
from policies.runner import (
    BATCH_SIZE,
    MEMORIES,
    POLICY_JOIN,
    JobResult,
    drain,
    params,
    policy,
    task,
)

_RUN_SCOPE = sql_literal(Scope.RUN)
# What the statement writes, and the history rows of it, as the store builds them
# (memories.history).
_CHANGED = history.update_memories(
    "changed",
    assignments=history.ARCHIVE,
    source="batch",
    where=f"m.id = batch.id AND m.active AND m.scope = {_RUN_SCOPE}",
    returning="m.id, m.project_id, batch.tier, batch.external_id, batch.status",
)
_EVENTS = history.insert_events(
    "events",
    history.Rows(
        "changed",
        EventAction.CLEARED,
        history.archived(),
        "'scratch of run ' || external_id || ', which ' || status",
    ),
)
_SCRATCH_BATCH = f"""
WITH batch AS (
    SELECT m.id, m.tier, r.external_id, r.status
    FROM {MEMORIES} m JOIN {Run._meta.db_table} r ON r.id = m.source_run_id {POLICY_JOIN}
    WHERE m.active AND m.scope = {_RUN_SCOPE} AND r.status <> {sql_literal(RunStatus.RUNNING)}
        AND r.finished_at <= %(now)s - make_interval(hours => {policy("scratch_keep_hours")})
    ORDER BY m.id
    LIMIT %(batch_size)s
    FOR NO KEY UPDATE OF m SKIP LOCKED
), {_CHANGED}, {_EVENTS}
SELECT project_id, count(*) FROM changed GROUP BY project_id
"""


def clear_run_scratch(
    *, now: datetime | None = None, batch_size: int = BATCH_SIZE, seconds: float | None = None
) -> JobResult:
    """Memories of scope ``run`` are a run's scratch: ``scratch_keep_hours`` after the run
    finished they are archived (restorable), unless promoted to the project meanwhile."""
    batch = params(now, batch_size, Actor.system("scratch"))
    return drain("clear_run_scratch", _SCRATCH_BATCH, batch, seconds)


clear_run_scratch_task = task("policies.clear_run_scratch", clear_run_scratch)
