"""Lifecycle policies: set-based SQL in short batches, safe to run twice or at once.

Each batch is one statement in its own transaction: it picks a bounded set of rows through
the job's partial index, skips rows another worker holds (``FOR UPDATE SKIP LOCKED``),
re-checks the job's condition on the rows it changes, and writes their history in the same
statement. A batch is therefore applied whole or not at all; a second run, or a second
worker, finds nothing left to do and writes no second history row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction
from django.utils import timezone

from assembly import cache as assembly_cache
from memories.models import EventAction, Memory, MemoryEvent

BATCH_SIZE = 5000


@dataclass
class JobResult:
    """What a policy job changed, per project (None: global memories)."""

    job: str
    batches: int = 0
    changed: dict[int | None, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.changed.values())


_EXPIRE_BATCH = f"""
WITH batch AS (
    SELECT id FROM {Memory._meta.db_table}
    WHERE active AND expires_at IS NOT NULL AND expires_at <= %(now)s
    ORDER BY expires_at, id
    LIMIT %(batch_size)s
    FOR UPDATE SKIP LOCKED
), changed AS (
    UPDATE {Memory._meta.db_table} AS m SET active = false, updated_at = %(now)s
    FROM batch WHERE m.id = batch.id AND m.active
    RETURNING m.id, m.project_id, m.expires_at
), events AS (
    INSERT INTO {MemoryEvent._meta.db_table}
        (memory_id, project_id, action, changes, reason, actor_label, created_at)
    SELECT id, project_id, %(action)s, %(changes)s::jsonb,
        'expired at ' || to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
        %(actor)s, %(now)s
    FROM changed
)
SELECT project_id, count(*) FROM changed GROUP BY project_id
"""


def expire_memories(*, now: datetime | None = None, batch_size: int = BATCH_SIZE) -> JobResult:
    """Memories whose ``expires_at`` has passed become inactive, each with an ``expired``
    history row. Batches run until none is full."""
    now = now or timezone.now()
    params = {
        "now": now,
        "batch_size": batch_size,
        "action": EventAction.EXPIRED.value,
        "changes": json.dumps({"active": [True, False]}),
        "actor": "system:expiry",
    }
    return _in_batches("expiry", _EXPIRE_BATCH, params, batch_size)


def _in_batches(job: str, sql: str, params: dict, batch_size: int) -> JobResult:
    result = JobResult(job)
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)
            counts = dict(cursor.fetchall())
            assembly_cache.invalidate(counts)
        result.batches += 1
        for project_id, count in counts.items():
            result.changed[project_id] = result.changed.get(project_id, 0) + count
        if sum(counts.values()) < batch_size:
            return result
