"""Expiry: a memory whose ``expires_at`` has passed becomes inactive."""

from __future__ import annotations

from datetime import datetime

from memories import history
from memories.actors import Actor
from memories.models import EventAction
from policies.runner import (
    ALL_IDS,
    BATCH_SIZE,
    MEMORIES,
    IdRange,
    JobResult,
    drain,
    params,
    task_in_parts,
)

_EXPIRED_AT = (
    """'expired at ' || to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')"""
)
# What the statement writes, and the history rows of it, as the store builds them
# (memories.history).
_CHANGED = history.update_memories(
    "changed",
    assignments={"active": "false", "updated_at": "%(now)s"},
    source="batch",
    where="m.id = batch.id AND m.active",
    returning="m.id, m.project_id, m.expires_at",
)
_EVENTS = history.insert_events(
    "events",
    history.Rows(
        "changed",
        EventAction.EXPIRED,
        history.DEACTIVATED,
        _EXPIRED_AT,
    ),
)
_EXPIRE_BATCH = f"""
WITH batch AS (
    SELECT id FROM {MEMORIES}
    WHERE active AND expires_at IS NOT NULL AND expires_at <= %(now)s
        AND id > %(ids_after)s AND id <= %(ids_upto)s
    ORDER BY expires_at, id
    LIMIT %(batch_size)s
    FOR NO KEY UPDATE SKIP LOCKED
), {_CHANGED}, {_EVENTS}
SELECT project_id, count(*) FROM changed GROUP BY project_id
"""


def expire_memories(
    *,
    now: datetime | None = None,
    batch_size: int = BATCH_SIZE,
    seconds: float | None = None,
    ids: IdRange = ALL_IDS,
) -> JobResult:
    """Memories whose ``expires_at`` has passed become inactive, each with an ``expired``
    history row. Batches run until none is full."""
    batch = params(now, batch_size, Actor.system("expiry"), ids_after=ids[0], ids_upto=ids[1])
    return drain("expire_memories", _EXPIRE_BATCH, batch, seconds)


expire_memories_task = task_in_parts("policies.expire_memories", expire_memories)
