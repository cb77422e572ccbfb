"""Confidence decay: a memory no agent was given for a while loses confidence."""

from __future__ import annotations

from datetime import datetime

from memories import history
from memories.actors import Actor
from memories.models import EventAction, ReviewStatus
from memories.models.choices import sql_literal
from memories.services import uses
from policies.runner import (
    ALL_IDS,
    BATCH_SIZE,
    IDLE_SINCE,
    MEMORIES,
    POLICY_JOIN,
    IdRange,
    JobResult,
    days,
    lowered,
    params,
    policy,
    task_in_parts,
    walk,
    walk_statement,
)

# What the statement writes, and the history rows of it, as the store builds them
# (memories.history).
_CHANGED = history.update_memories(
    "changed",
    assignments={
        "confidence": "due.after",
        "active": "due.after >= due.threshold",
        "decayed_at": "%(now)s",
        "updated_at": "%(now)s",
    },
    source="due",
    where="m.id = due.id",
    returning="m.id, m.project_id, m.active, due.before, due.after, due.idle_days",
)
_EVENTS = history.insert_events(
    "events",
    history.Rows(
        "changed",
        EventAction.DECAYED,
        history.CONFIDENCE_CHANGES,
        "'not given to an agent for ' || idle_days || ' days'",
    ),
)
_DECAY_BATCH = walk_statement(
    "active",
    f"""due AS (
    SELECT m.id, m.confidence AS before,
        {lowered(policy("decay_step"))} AS after,
        {policy("deactivate_below")} AS threshold,
        floor(extract(epoch FROM %(now)s - {IDLE_SINCE}) / 86400)::int AS idle_days
    FROM {MEMORIES} m JOIN win ON win.id = m.id {POLICY_JOIN}
    WHERE m.active AND m.confidence > 0 AND {policy("decay_step")} > 0
        AND {IDLE_SINCE} <= %(now)s - {days("decay_after_days")}
        AND (m.decayed_at IS NULL OR m.decayed_at <= %(now)s - {days("decay_period_days")})
        AND NOT (m.pinned AND {policy("decay_exempt_pinned")})
        AND NOT (m.review_status = {sql_literal(ReviewStatus.APPROVED)}
                 AND {policy("decay_exempt_approved")})
    FOR NO KEY UPDATE OF m SKIP LOCKED
), {_CHANGED}, {_EVENTS}""",
)


def decay_memories(
    *,
    now: datetime | None = None,
    batch_size: int = BATCH_SIZE,
    seconds: float | None = None,
    ids: IdRange = ALL_IDS,
) -> JobResult:
    """A memory not given to an agent for ``decay_after_days`` loses ``decay_step`` of
    confidence once per ``decay_period_days`` (never below 0); below the policy's
    deactivation threshold it becomes inactive. Pinned and human-approved memories are
    exempt unless the policy says otherwise. ``decayed_at`` makes a second run within the
    period a no-op."""
    uses.flush()  # decided by the last use: the noted ones first
    batch = params(now, batch_size, Actor.system("decay"))
    return walk("decay_memories", _DECAY_BATCH, batch, seconds, ids=ids)


decay_memories_task = task_in_parts("policies.decay_memories", decay_memories)
